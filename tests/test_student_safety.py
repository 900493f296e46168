"""A student's code cannot break the session, and our tools delete only what they wrote.

Each case runs in a fresh process, as a first call of a session would: a cached reference, a
patched module or a changed default dtype cannot leak from one test into the next, and a
``SystemExit`` that escaped would end that process, not pytest.  The processes are forked from
one server that has imported the prelude (conftest's ``ForkServer``), so a case does not pay
torch's imports; a case with a prelude of its own gets a new interpreter.  The script prints
one JSON line with what it saw; the test asserts on it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ForkServer, attnlab_command

ROOT = Path(__file__).resolve().parents[1]
PRELUDE = """
import json, sys, time
import torch
from attnlab import attention, checks
from attnlab.guard import sandbox
def out(**kw):
    print("RESULT " + json.dumps(kw))
"""


def _student_env() -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("ATTNLAB_SOLUTIONS", None)  # the student's mode
    return env


def _result(done: subprocess.CompletedProcess) -> dict:
    """The dict the case passed to out(), and how much it printed."""
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(lines) == 1, done.stdout[-3000:]
    result = json.loads(lines[0].removeprefix("RESULT "))
    result["stdout_chars"] = len(done.stdout)
    return result


@pytest.fixture(scope="module")
def run():
    """run(code, timeout, prelude): run ``code`` after ``prelude`` in a fresh process; the dict
    it passed to out().  The usual prelude is imported once by a fork server; another gets a
    new interpreter (what it imports, or leaves out, is the point of such a case)."""
    with ForkServer(PRELUDE, _student_env(), ROOT) as server:

        def run_case(code: str, timeout: float = 120, prelude: str = PRELUDE) -> dict:
            if prelude == PRELUDE:
                return _result(server.run(textwrap.dedent(code), timeout))
            command = [sys.executable, "-c", prelude + textwrap.dedent(code)]
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=_student_env(),
                cwd=ROOT,
            )
            return _result(done)

        yield run_case


# --------------------------------------------------------------------------- state put back
def test_a_reference_computed_while_the_library_is_patched_is_not_poisoned(run):
    r = run("""
        orig = attention.masked_softmax
        attention.masked_softmax = lambda s, m=None: torch.softmax(s * 0.5, -1)  # alpha changes
        first = checks.in_model("dot_score", checks.reference("dot_score"))  # the first call
        kept = attention.masked_softmax is not orig  # the user's patch is theirs to undo
        attention.masked_softmax = orig
        second = checks.in_model("dot_score", checks.reference("dot_score"))
        out(first=first.ok, first_msg=first.message, kept=kept, second=second.ok,
            second_msg=second.message)
    """)
    assert r["second"], r["second_msg"]
    assert r["first"] and "used the library's own" in r["first_msg"], r["first_msg"]
    assert r["kept"]


def test_a_function_replaced_before_the_checks_are_imported_is_not_their_reference(run):
    # The user's "mine in the library" comes first, the checks are imported after it: the
    # library's function is then taken from attention.py's source (the same code, on the
    # module's globals), and the user's original, put back, counts as the library's own.
    prelude = PRELUDE.replace(
        "from attnlab import attention, checks\n", "from attnlab import attention\n"
    )
    assert "checks" not in prelude.replace("def out", "")  # nothing of the checks imported yet
    r = run(
        """
        import sys
        orig = attention.masked_softmax
        attention.masked_softmax = lambda s, m=None: torch.softmax(s * 0.5, -1)
        imported_early = any(m.startswith(("attnlab.checks", "attnlab.guard")) for m in sys.modules)
        from attnlab import checks
        attention.masked_softmax = orig
        unit = checks.check_masked_softmax(orig)
        inside = checks.in_model("masked_softmax", orig)
        reference = checks.reference("masked_softmax")
        scores = torch.randn(2, 3, 5)
        out(unit=unit.ok, unit_msg=unit.message, inside=inside.ok, inside_msg=inside.message,
            early=imported_early, same_code=reference.__code__ == orig.__code__,
            same_values=torch.equal(reference(scores), orig(scores)))
        """,
        prelude=prelude.replace("from attnlab.guard import sandbox\n", ""),
    )
    assert not r["early"]
    assert r["unit"], r["unit_msg"]
    assert "replaced" not in r["unit_msg"], r["unit_msg"]  # orig is back: nothing to say
    assert r["inside"], r["inside_msg"]
    assert r["same_code"] and r["same_values"]


def test_a_patch_inside_a_students_function_is_put_back_and_named(run):
    r = run("""
        orig = attention.masked_softmax
        def dot_score(s, h):
            attention.masked_softmax = lambda x, m=None: torch.softmax(x, -1)
            return s @ h.transpose(-2, -1)
        unit = checks.check_dot_score(dot_score)
        inside = checks.in_model("dot_score", dot_score)
        restored = attention.masked_softmax is orig
        good = checks.in_model("dot_score", lambda s, h: s @ h.transpose(-2, -1))
        out(unit=unit.message, unit_ok=unit.ok, inside=inside.message, inside_ok=inside.ok,
            restored=restored, good=good.ok, good_msg=good.message)
    """)
    words = "your function changed `attention.masked_softmax`; it was put back"
    assert not r["unit_ok"] and words in r["unit"], r["unit"]
    assert not r["inside_ok"] and words in r["inside"], r["inside"]
    assert r["restored"]
    assert r["good"], r["good_msg"]  # a correct function passes after a wrong one


def test_default_dtype_grad_mode_parameters_and_hooks_are_put_back(run):
    r = run("""
        from attnlab.checks.inside_models import reference_model
        model = reference_model("rnnsearch-dates").model
        before = {k: v.clone() for k, v in model.state_dict().items()}
        def decode_step(s_prev, h, y_prev, score, cell):
            torch.set_default_dtype(torch.float64)
            torch.set_grad_enabled(True)
            with torch.no_grad():
                cell.weight_ih.mul_(0.5)  # the model's own GRU cell
            cell.register_forward_hook(lambda *a: None)
            return checks.reference("decode_step")(s_prev, h, y_prev, score, cell)
        bad = checks.in_model("decode_step", decode_step)
        same = all(torch.equal(before[k], v) for k, v in model.state_dict().items())
        hooks = sum(len(m._forward_hooks) for m in model.modules())
        good = checks.in_model("decode_step", checks.reference("decode_step"))
        out(bad=bad.message, ok=bad.ok, dtype=str(torch.get_default_dtype()),
            grad=torch.is_grad_enabled(), same=same, hooks=hooks, good=good.ok)
    """)
    assert not r["ok"]
    for words in ("the default dtype", "grad mode", "the parameters of `rnnsearch-dates", "hooks"):
        assert words in r["bad"], r["bad"]
    assert "put back" in r["bad"]
    assert r["dtype"] == "torch.float32" and r["grad"] is True  # as they were before the check
    assert r["same"] and r["hooks"] == 0 and r["good"]


def test_a_correct_function_passes_after_any_wrong_one_in_any_order(run):
    r = run("""
        import itertools
        def right(s, h):
            return s @ h.transpose(-2, -1)
        def patches(s, h):
            attention.dot_score = lambda a, b: a
            return right(s, h)
        def dtype(s, h):
            torch.set_default_dtype(torch.float64)
            return right(s, h)
        def exits(s, h):
            raise SystemExit(1)
        wrong = [patches, dtype, exits, lambda s, h: right(s, h) * 2]
        results = []
        for order in itertools.permutations(wrong, 2):
            for fn in order:
                checks.in_model("dot_score", fn)
            results.append(checks.in_model("dot_score", right).ok)
        out(all_ok=all(results), n=len(results))
    """)
    assert r["all_ok"] and r["n"] == 12


# --------------------------------------------------------------------------- bounded
def test_an_endless_loop_and_a_sleep_are_stopped_and_the_kernel_stays_usable(run):
    r = run("""
        def loops(s, h):
            while True:
                pass
        def sleeps(s, h):
            time.sleep(30)
        def swallows(s, h):  # catches the interruption and carries on
            while True:
                try:
                    time.sleep(30)
                except BaseException:
                    pass
        times, messages = [], []
        for fn in (loops, sleeps, swallows):
            start = time.perf_counter()
            messages.append(checks.in_model("dot_score", fn).message)
            times.append(time.perf_counter() - start)
        good = checks.check_dot_score(lambda s, h: s @ h.transpose(-2, -1)).ok
        out(times=times, messages=messages, good=good)
    """)
    for message, seconds in zip(r["messages"], r["times"], strict=True):
        assert "took too long" in message, message
        assert "your function took longer than 2 s" in message, message  # the words a student reads
        assert seconds < 15, (message, seconds)  # stopped after about 2 s, not 30 s or never
    assert r["good"]


def test_the_budget_cannot_interrupt_one_long_call_into_c(run):
    """What the SIGALRM budget cannot do: stop a single long C call (here the builtin sum over
    a range, which never returns to the interpreter).  The check answers only when that call
    returns, well after the budget; Python code and sleeps are stopped on time (test above)."""
    r = run("""
        n = 10_000_000
        start = time.perf_counter(); sum(range(n)); one = time.perf_counter() - start
        n = int(n * 1.5 / one)  # a C call of about 1.5 s
        start = time.perf_counter(); sum(range(n)); c_call = time.perf_counter() - start
        sandbox.CALL_BUDGET_S = 0.2
        def in_c(s, h):
            sum(range(n))
            return s @ h.transpose(-2, -1)
        start = time.perf_counter()
        result = checks.check_dot_score(in_c)
        out(c_call=c_call, took=time.perf_counter() - start, message=result.message)
    """)
    assert "took longer than 0.2 s" in r["message"], r["message"]
    # Not stopped at 0.2 s: the C call (about 1.5 s when calibrated; the machine's load moves
    # it either way, so no ratio to the calibration) ran to its end before the check answered.
    assert r["c_call"] > 0.5
    assert r["took"] > 3 * 0.2


def test_a_print_in_every_call_is_shown_once_and_cut(run):
    r = run("""
        def chatty(scores, mask=None):
            print("scores:", scores)  # a big tensor, on every call of the model
            return checks.reference("masked_softmax")(scores, mask)
        result = checks.in_model("masked_softmax", chatty)
        out(ok=result.ok, printed=result.printed, text=str(result))
    """)
    assert r["ok"]
    lines = r["printed"].splitlines()
    assert lines[0].startswith("Your function printed") and "shown once" in lines[0]
    assert len(lines) <= 6 and all(len(line) <= 121 for line in lines)
    assert r["text"].count("Your function printed") == 1
    assert r["stdout_chars"] < 5000  # not megabytes of output


@pytest.mark.parametrize(
    "body, words",
    [
        ("import sys; sys.exit(3)", "SystemExit: sys.exit(3)"),
        ("raise SystemExit", "SystemExit"),
        ("raise GeneratorExit('odd')", "GeneratorExit: odd"),
        ("raise Strange()", "its message cannot be shown"),
    ],
)
def test_every_exception_becomes_a_message(body, words, run):
    r = run(f"""
        class Strange(Exception):
            def __str__(self):
                raise RuntimeError("no")
        def dot_score(s, h):
            {body}
        unit = checks.check_dot_score(dot_score)
        inside = checks.in_model("dot_score", lambda s, h: dot_score(s, h) if s.shape[0] > 5 else s @ h.mT)
        out(unit=unit.message, inside=inside.message)
    """)
    for message in (r["unit"], r["inside"]):
        assert "raised an exception" in message and words in message, message


def test_a_keyboard_interrupt_stops_the_check_and_says_so(run):
    r = run("""
        import _thread, threading
        def loops(s, h):
            while True:
                pass
        threading.Timer(0.5, _thread.interrupt_main).start()  # the user presses stop
        start = time.perf_counter()
        result = checks.in_model("dot_score", loops)
        took = time.perf_counter() - start
        out(message=result.message, took=took, after=checks.check_dot_score(lambda s, h: s @ h.mT).ok)
    """)
    assert "✗ dot_score in rnnsearch-dates-dot: interrupted." in r["message"], r  # not the budget
    assert r["after"]


def test_a_wrong_dtype_is_named_as_the_students(run):
    r = run("""
        f64 = lambda s, h: (s @ h.transpose(-2, -1)).double()
        out(unit=checks.check_dot_score(f64).message, inside=checks.in_model("dot_score", f64).message)
    """)
    for message in (r["unit"], r["inside"]):
        assert "returned float64; the model works in float32" in message, message
        assert "expected scalar type" not in message


def test_the_time_budget_never_fires_on_the_reference_answers(run):
    r = run("""
        used = {}
        for name in checks.IN_MODEL:
            result = checks.in_model(name, checks.reference(name))
            assert result.ok, result.message
        for name in checks.EXERCISES:
            assert getattr(checks, f"check_{name}")(checks.reference(name)).ok
        out(done=True)
    """)
    assert r["done"]


# --------------------------------------------------------------------------- the widget
def test_system_exit_typed_into_the_decode_steppers_text_box_is_a_message(run):
    r = run("""
        from attnlab.widgets import DecodeStepper
        def score(query, keys):
            if keys.shape[-2] == 12:  # '4 June 2001' and its <eos>
                sys.exit("bye")
            return query @ keys.transpose(-2, -1)
        w = DecodeStepper(model="rnnsearch-dates-dot", score=score)
        first = w.translation
        msg = {"content": {"data": {"method": "update", "state": {"value": "4 June 2001"},
               "buffer_paths": []}}, "buffers": []}
        w.text._handle_msg(msg)  # what a browser edit of the text box sends the kernel
        out(first=first, value=w.text.value, message=w.message, still=w.translation,
            score_is_back=type(w.model.score).__name__)
    """)
    assert r["value"] == "4 June 2001"
    assert "SystemExit" in r["message"] and "bye" in r["message"], r["message"]
    assert r["still"] == r["first"]  # the last good decoding stays
    assert r["score_is_back"] == "DotScore"


def test_the_decode_stepper_stops_a_slow_score_and_names_a_patch(run):
    r = run("""
        from attnlab.widgets import DecodeStepper
        def slow(query, keys):
            while True:
                pass
        def patches(query, keys):
            attention.masked_softmax = lambda s, m=None: s
            return query @ keys.transpose(-2, -1)
        orig = attention.masked_softmax
        start = time.perf_counter()
        a = DecodeStepper(model="rnnsearch-dates-dot", score=slow).message
        took = time.perf_counter() - start
        b = DecodeStepper(model="rnnsearch-dates-dot", score=patches).message
        def stopped(query, keys):
            raise KeyboardInterrupt  # as the kernel's stop button raises it
        c = DecodeStepper(model="rnnsearch-dates-dot", score=stopped).message
        out(a=a, took=took, b=b, back=attention.masked_softmax is orig, c=c)
    """)
    assert r["c"].startswith("Interrupted")
    assert "took longer than 2 s" in r["a"] and r["took"] < 25
    assert "changed `attention.masked_softmax`; it was put back" in r["b"] and r["back"]


# --------------------------------------------------------------------------- our tools
def test_save_deletes_only_the_weights_its_previous_card_named(tmp_path, run):
    user = tmp_path / "rnnsearch-dates.finetuned-v2.safetensors"
    plain = tmp_path / "rnnsearch-dates.safetensors"
    user.write_bytes(b"mine")
    plain.write_bytes(b"also mine")
    r = run(f"""
        from pathlib import Path
        from attnlab.training import checkpoints
        folder = Path({str(tmp_path)!r})
        model = attnlab_model = checkpoints.load("rnnsearch-dates")
        card = {{k: v for k, v in model.card.items() if k not in ("checksum",)}}
        first = checkpoints.save(model, "rnnsearch-dates", card, folder)
        with torch.no_grad():
            next(model.parameters()).add_(1.0)  # other weights: another file
        second = checkpoints.save(model, "rnnsearch-dates", card, folder)
        out(first=first.name, first_left=first.exists(), second=second.name,
            files=sorted(p.name for p in folder.iterdir()))
    """)
    assert r["first"] != r["second"] and not r["first_left"]
    assert user.read_bytes() == b"mine" and plain.read_bytes() == b"also mine"
    assert r["second"] in r["files"]


def test_save_does_not_follow_a_card_that_names_a_file_elsewhere(tmp_path, run):
    outside = tmp_path / "outside.safetensors"
    outside.write_bytes(b"not ours")
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "link.safetensors").symlink_to(outside)
    for named in ("../outside.safetensors", "link.safetensors"):
        (folder / "rnnsearch-dates.json").write_text(json.dumps({"weights_file": named}))
        r = run(f"""
            from attnlab.training import checkpoints
            model = checkpoints.load("rnnsearch-dates")
            try:
                checkpoints.save(model, "rnnsearch-dates", dict(model.card), {str(folder)!r})
                out(done=True, refused="")
            except checkpoints.CheckpointError as error:  # not a card of ours: left alone
                out(done=True, refused=str(error))
        """)
        assert r["done"] and outside.read_bytes() == b"not ours"
        assert "not an attnlab checkpoint card" in r["refused"] and "\n" not in r["refused"]
        assert (folder / "link.safetensors").is_symlink()


def course(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    exercises = ROOT / "notebooks" / "07_attention_exercises.ipynb"
    return attnlab_command("course", str(exercises), *args, cwd=cwd)


def test_the_course_tool_refuses_a_symlink_into_the_repository(tmp_path):
    committed = (ROOT / "notebooks" / "07_attention_exercises.ipynb").read_bytes()
    try:
        (tmp_path / "source").mkdir()
        (tmp_path / "source" / "lecture07").symlink_to(ROOT / "notebooks")
        done = course(str(tmp_path))
        assert done.returncode != 0
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "symlink" in done.stderr and "refusing" in done.stderr
        outside = tmp_path.parent / f"{tmp_path.name}-elsewhere"
        outside.mkdir()
        (tmp_path / "source" / "other").symlink_to(outside)
        done = course(str(tmp_path), "--assignment", "other")
        assert done.returncode != 0 and "leads out of the course folder" in done.stderr
        assert not any(outside.iterdir())
        for path in ("../../notebooks", str(ROOT / "notebooks")):  # --assignment pointing there
            done = course(str(tmp_path), "--assignment", path)
            assert done.returncode != 0 and "refusing" in done.stderr, done.stderr
        done = course(str(ROOT / "notebooks"))  # a course folder inside the repository
        assert done.returncode != 0 and "refusing" in done.stderr
    finally:
        path = ROOT / "notebooks" / "07_attention_exercises.ipynb"
        if path.read_bytes() != committed:
            path.write_bytes(committed)
            pytest.fail("the course tool wrote into the repository")


def test_the_course_tool_keeps_an_edited_source_unless_forced(tmp_path):
    assert course(str(tmp_path)).returncode == 0
    source = tmp_path / "source" / "lecture07" / "07_attention_exercises.ipynb"
    edited = source.read_text().replace("Exercises", "Exercises (edited)")
    source.write_text(edited)
    source.chmod(0o444)
    again = course(str(tmp_path))
    assert again.returncode != 0 and "--force" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    assert source.read_text() == edited
    forced = course(str(tmp_path), "--force")
    assert forced.returncode == 0, forced.stderr
    assert source.read_text() != edited
    assert (source.parent / f"{source.name}.bak").read_text() == edited


def test_the_course_tool_answers_a_file_in_the_way_or_a_read_only_folder_in_one_line(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "source").write_text("a file where a folder should be")
    done = course(str(blocked))
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "in the way" in done.stderr and "Traceback" not in done.stderr
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        done = course(str(locked))
        assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1
        assert "permission denied" in done.stderr and "Traceback" not in done.stderr
    finally:
        locked.chmod(0o755)


def test_the_course_tool_answers_a_read_only_folder_in_one_line(tmp_path, monkeypatch, capsys):
    """As root a chmod cannot make a folder read-only: the OS's refusal is simulated."""
    from attnlab.__main__ import main
    from attnlab.checks import course as tool

    def denied(path, data):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(tool, "write_atomic", denied)
    exercises = ROOT / "notebooks" / "07_attention_exercises.ipynb"
    assert main(["course", str(exercises), str(tmp_path)]) == 1
    message = capsys.readouterr().err
    assert "permission denied" in message and message.count("\n") == 1
    assert message.startswith("python -m attnlab course: error: cannot write")


def test_a_whole_in_model_has_a_budget_too(run):
    r = run("""
        sandbox.RUN_BUDGET_S = 1.0  # 10 s by default; each call below stays under 2 s
        def slow(s, h):
            time.sleep(0.3)
            return s @ h.transpose(-2, -1)
        start = time.perf_counter()
        result = checks.in_model("dot_score", slow)
        out(message=result.message, took=time.perf_counter() - start)
    """)
    assert "took longer than 1 s in all" in r["message"], r["message"]
    assert r["took"] < 10
