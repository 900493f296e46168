"""What a student's function does inside a checked call does not outlast it, and is named.

Each case runs in a fresh process forked from one server (conftest's ``ForkServer``), as in
test_student_safety.py: a function changes something torch, Python or the process holds, the
check must name it, and a correct function checked afterwards must still pass (and a wrong
one fail).  The script prints one JSON line with what it saw; the test asserts on it.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from conftest import ForkServer

ROOT = Path(__file__).resolve().parents[1]
PRELUDE = """
import json, os, sys, time
import torch
from attnlab import attention, checks
from attnlab.guard import sandbox
def out(**kw):
    sys.stdout.flush()
    os.write(1, ("RESULT " + json.dumps(kw) + "\\n").encode())
def right(s, h):
    return s @ h.transpose(-2, -1)
"""


def _result(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(lines) == 1, done.stdout[-3000:]
    result = json.loads(lines[0].removeprefix("RESULT "))
    result["stdout_chars"] = len(done.stdout) + len(done.stderr)
    return result


@pytest.fixture(scope="module")
def run():
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("ATTNLAB_SOLUTIONS", None)  # the student's mode
    with ForkServer(PRELUDE, env, ROOT) as server:

        def run_case(code: str, timeout: float = 120) -> dict:
            return _result(server.run(textwrap.dedent(code), timeout))

        yield run_case


def test_a_dunder_of_torch_tensor_is_put_back_and_named(run):
    r = run("""
        def patches(s, h):
            torch.Tensor.__matmul__ = lambda a, b: torch.zeros(1)
            return right(s, h)
        bad = checks.check_dot_score(patches)
        x = torch.ones(2, 3)
        out(bad=bad.message, ok=bad.ok, inherited="__matmul__" not in vars(torch.Tensor),
            works=(x @ x.T).tolist() == [[3.0, 3.0], [3.0, 3.0]],
            good=checks.check_dot_score(right).ok)
    """)
    assert not r["ok"] and "`torch.Tensor.__matmul__`" in r["bad"], r["bad"]
    assert r["inherited"] and r["works"] and r["good"]


def test_global_module_hooks_are_put_back_and_named(run):
    r = run("""
        import torch.nn.modules.module as M
        def hooks(s, h):
            M.register_module_forward_hook(lambda m, i, o: o * 0)
            M.register_module_forward_pre_hook(lambda m, i: None)
            M.register_module_full_backward_hook(lambda m, gi, go: None)
            return right(s, h)
        bad = checks.in_model("dot_score", hooks)
        left = [len(M._global_forward_hooks), len(M._global_forward_pre_hooks),
                len(M._global_backward_hooks)]
        out(bad=bad.message, ok=bad.ok, left=left, good=checks.in_model("dot_score", right).ok)
    """)
    assert not r["ok"] and "global module hooks" in r["bad"], r["bad"]
    assert r["left"] == [0, 0, 0] and r["good"]


def test_default_device_inference_mode_and_grad_leftovers_are_put_back_and_named(run):
    r = run("""
        kept = []
        def leaves_modes(s, h):
            torch.set_default_device("meta")
            mode = torch.inference_mode()
            mode.__enter__()
            kept.append(mode)  # never left
            torch._C._set_grad_enabled(False)
            return right(s.to("cpu"), h.to("cpu"))
        bad = checks.check_dot_score(leaves_modes)
        state = dict(device=str(torch.get_default_device()),
                     inference=torch.is_inference_mode_enabled(), grad=torch.is_grad_enabled(),
                     zeros=str(torch.zeros(1).device))
        out(bad=bad.message, ok=bad.ok, good=checks.check_dot_score(right).ok, **state)
    """)
    assert not r["ok"], r["bad"]
    for words in ("the default device", "inference mode", "grad mode"):
        assert words in r["bad"], r["bad"]
    assert r["device"] == "cpu" and r["zeros"] == "cpu"
    assert r["inference"] is False and r["grad"] is True and r["good"]


def test_the_interpreters_and_processs_settings_are_put_back_and_named(run):
    r = run("""
        import signal, threading, warnings
        import numpy as np
        os.environ["ATTNLAB_CHANGED"] = "before"
        os.environ["ATTNLAB_REMOVED"] = "here"
        handler = signal.getsignal(signal.SIGINT)
        limit, filters, errors = sys.getrecursionlimit(), list(warnings.filters), np.geterr()
        def meddles(s, h):
            sys.setrecursionlimit(50)
            sys.settrace(lambda *a: None)
            sys.setprofile(lambda *a: None)
            threading.settrace(lambda *a: None)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            np.seterr(all="raise")
            warnings.simplefilter("error")
            os.environ["ATTNLAB_ADDED"] = "1"
            os.environ["ATTNLAB_CHANGED"] = "after"
            del os.environ["ATTNLAB_REMOVED"]
            return right(s, h)
        bad = checks.check_dot_score(meddles)
        back = dict(
            limit=sys.getrecursionlimit() == limit, trace=sys.gettrace() is None,
            profile=sys.getprofile() is None, thread_trace=threading.gettrace() is None,
            sigint=signal.getsignal(signal.SIGINT) is handler, numpy=np.geterr() == errors,
            filters=warnings.filters == filters, added="ATTNLAB_ADDED" not in os.environ,
            changed=os.environ["ATTNLAB_CHANGED"] == "before",
            removed=os.environ.get("ATTNLAB_REMOVED") == "here")
        session = sandbox.Session()  # the check's message lists four: the session has all
        session.call(meddles, torch.ones(1, 2, 3), torch.ones(1, 4, 3))
        out(bad=bad.message, ok=bad.ok, back=back, good=checks.check_dot_score(right).ok,
            changes=" ".join(session.changes))
    """)
    assert not r["ok"] and "recursion limit" in r["bad"], r["bad"]
    for words in ("recursion limit", "`sys.settrace`", "`sys.setprofile`", "`threading.settrace`",
                  "SIGINT handler", "`np.seterr`", "warnings filters", "`os.environ`",
                  "ATTNLAB_ADDED"):  # fmt: skip
        assert words in r["changes"], (words, r["changes"])
    assert all(r["back"].values()), r["back"]
    assert r["good"]


def test_a_stop_button_pressed_after_a_sigint_handler_was_replaced_still_stops(run):
    r = run("""
        import _thread, signal, threading
        def ignores_stop(s, h):
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            return right(s, h)
        checks.check_dot_score(ignores_stop)
        def loops(s, h):
            while True:
                pass
        threading.Timer(0.5, _thread.interrupt_main).start()
        result = checks.in_model("dot_score", loops)
        out(message=result.message)
    """)
    assert "interrupted" in r["message"], r["message"]


@pytest.mark.parametrize(
    "cancel",
    [
        "signal.alarm(0)",
        "signal.setitimer(signal.ITIMER_REAL, 0)",
        "signal.signal(signal.SIGALRM, lambda *a: None)",
        "signal.signal(signal.SIGALRM, signal.SIG_IGN)",
    ],
)
def test_a_cancelled_timer_does_not_switch_the_budget_off(cancel, run):
    r = run(f"""
        import signal
        def escapes(s, h):
            {cancel}
            while True:
                pass
        start = time.perf_counter()
        result = checks.check_dot_score(escapes)
        took = time.perf_counter() - start
        out(message=result.message, took=took, good=checks.check_dot_score(right).ok,
            handler=signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None),
            timer=signal.getitimer(signal.ITIMER_REAL)[0])
    """)
    assert "took longer than 2 s" in r["message"], r["message"]
    assert "the time budget's timer" in r["message"], r["message"]
    assert r["took"] < 10 and r["good"]
    assert r["handler"] and r["timer"] == 0


def test_a_thread_started_by_the_call_is_stopped_and_named(run):
    r = run("""
        import threading
        orig = attention.masked_softmax
        def starts(s, h):
            def keep_patching():
                while True:
                    attention.masked_softmax = lambda x, m=None: torch.softmax(x * 0, -1)
                    time.sleep(0.001)
            threading.Thread(target=keep_patching, name="patcher", daemon=True).start()
            return right(s, h)
        bad = checks.check_dot_score(starts)
        time.sleep(0.2)
        alive = any(t.name == "patcher" for t in threading.enumerate())
        restored = attention.masked_softmax is orig
        good = checks.in_model("dot_score", right)
        out(bad=bad.message, ok=bad.ok, alive=alive, restored=restored, good=good.ok,
            good_msg=good.message)
    """)
    assert not r["ok"] and "started a thread (`patcher`); it was stopped" in r["bad"], r["bad"]
    assert not r["alive"] and r["restored"]
    assert r["good"], r["good_msg"]


def test_a_thread_that_cannot_be_stopped_makes_later_checks_fail(run):
    r = run("""
        import threading
        def starts(s, h):
            threading.Thread(target=time.sleep, args=(60,), name="sleeper", daemon=True).start()
            return right(s, h)
        bad = checks.check_dot_score(starts)
        later = checks.check_dot_score(right)
        out(bad=bad.message, later=later.message, later_ok=later.ok)
    """)
    assert "`sleeper`" in r["bad"] and "still running" in r["bad"], r["bad"]
    assert not r["later_ok"] and "restart the kernel" in r["later"], r["later"]


def test_a_fork_inside_the_call_ends_in_the_child_and_is_named(run):
    r = run("""
        def forks(s, h):
            os.fork()  # the child would go on with the check, without a budget
            return right(s, h)
        bad = checks.check_dot_score(forks)
        def spawns(s, h):
            import subprocess
            subprocess.Popen(["sleep", "60"])
            return right(s, h)
        spawned = checks.check_dot_score(spawns)
        kids = open(f"/proc/self/task/{os.getpid()}/children").read().split()
        out(bad=bad.message, ok=bad.ok, spawned=spawned.message, kids=kids,
            good=checks.check_dot_score(right).ok)
    """)
    assert not r["ok"] and "started a process" in r["bad"], r["bad"]
    assert "started a process" in r["spawned"], r["spawned"]
    assert r["kids"] == [] and r["good"]  # one RESULT line: the child printed nothing


def test_the_references_and_the_library_as_imported_cannot_be_edited(run):
    r = run("""
        import operator
        from attnlab.checks import exercises
        from attnlab.checks.exercises import scores
        from attnlab.checks.inside_models import reference_model
        from attnlab.guard import library
        wrong = lambda s, h: s @ h.transpose(-2, -1) * 2
        refused = []
        def edits(s, h):
            for edit in (lambda: operator.setitem(exercises._REFERENCES, "dot_score", wrong),
                         lambda: operator.setitem(exercises.BODIES, "dot_score", lambda fn: "ok"),
                         lambda: operator.setitem(dict(library.LIBRARY.saved)[attention],
                                                  "masked_softmax", lambda x, m=None: x)):
                try:
                    edit()
                except TypeError:
                    refused.append(True)
            scores.REFERENCES["dot_score"] = wrong
            reference_model("rnnsearch-dates-dot").decoded.alpha.zero_()
            return wrong(s, h)
        bad = checks.check_dot_score(edits)
        after = checks.check_dot_score(wrong)
        inside = checks.in_model("dot_score", right)
        out(bad=bad.message, refused=len(refused), after=after.ok, inside=inside.ok,
            inside_msg=inside.message)
    """)
    assert r["refused"] == 3
    assert "`checks.exercises.scores.REFERENCES`" in r["bad"], r["bad"]
    assert not r["after"]  # the reference is the library's again: a wrong function fails
    assert r["inside"], r["inside_msg"]


def test_a_deleted_checkpoint_is_named_and_the_loaded_model_stays_in_use(tmp_path, run):
    shipped = ROOT / "src" / "attnlab" / "checkpoints"
    for path in shipped.glob("rnnsearch-dates-dot*"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    r = run(f"""
        from pathlib import Path
        from attnlab.guard import state
        from attnlab.training import checkpoints
        folder = Path({str(tmp_path)!r})
        checkpoints.CHECKPOINT_DIR = state.CHECKPOINT_DIR = folder  # a copy: this one goes
        first = checks.in_model("dot_score", right)
        def deletes(s, h):
            for path in folder.glob("rnnsearch-dates-dot.*.safetensors"):
                path.unlink()
            return right(s, h)
        bad = checks.check_dot_score(deletes)
        later = checks.in_model("dot_score", right)
        out(first=first.ok, bad=bad.message, ok=bad.ok, later=later.ok, later_msg=later.message)
    """)
    assert r["first"]
    assert not r["ok"] and "deleted `rnnsearch-dates-dot." in r["bad"], r["bad"]
    assert "cannot be put back" in r["bad"], r["bad"]
    assert r["later"], r["later_msg"]


def test_another_loaded_model_changed_through_a_global_reference_is_put_back(run):
    r = run("""
        from attnlab.checks.inside_models import reference_model
        first = checks.in_model("dot_score", right)  # rnnsearch-dates-dot: loaded, kept
        other = reference_model("rnnsearch-dates-dot").model
        before = {k: v.clone() for k, v in other.state_dict().items()}
        def changes_other(scores, mask=None):
            with torch.no_grad():
                for p in other.parameters():
                    p.mul_(0.5)
            other.score = torch.nn.Identity()
            return checks.reference("masked_softmax")(scores, mask)
        bad = checks.check_masked_softmax(changes_other)
        same = all(torch.equal(before[k], v) for k, v in other.state_dict().items())
        later = checks.in_model("dot_score", right)
        out(first=first.ok, bad=bad.message, ok=bad.ok, same=same,
            score=type(other.score).__name__, later=later.ok, later_msg=later.message)
    """)
    assert r["first"] and not r["ok"], r["bad"]
    assert "rnnsearch-dates-dot" in r["bad"], r["bad"]
    assert r["same"] and r["score"] == "DotScore"
    assert r["later"], r["later_msg"]


def test_a_default_dtype_set_before_the_check_does_not_fail_a_correct_function(run):
    r = run("""
        torch.set_default_dtype(torch.float64)  # a careless cell, before the check
        results = [checks.check_dot_score(right), checks.check_masked_softmax(
                   checks.reference("masked_softmax")), checks.in_model("dot_score", right)]
        out(ok=[x.ok for x in results], messages=[x.message for x in results],
            dtype=str(torch.get_default_dtype()))
    """)
    assert all(r["ok"]), r["messages"]
    assert r["dtype"] == "torch.float64"  # the user's setting, theirs again after the check


def test_output_through_the_process_streams_and_logging_is_captured(run):
    r = run("""
        import logging
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)
        def chatty(s, h):
            for i in range(20):
                sys.__stdout__.write(f"dunder {i}\\n")
                os.write(1, f"fd one {i}\\n".encode())
                os.write(2, f"fd two {i}\\n".encode())
                logging.info("logged %d", i)
            return right(s, h)
        result = checks.check_dot_score(chatty)
        out(ok=result.ok, printed=result.printed)
    """)
    assert r["ok"]
    # two hidden examples, each 20 lines four ways: every one counted, none on the streams
    assert r["printed"].startswith("Your function printed 160 lines"), r["printed"]
    assert r["stdout_chars"] < 1500, r["stdout_chars"]  # not 160 lines on the process's streams


def test_a_returned_tensor_subclass_runs_none_of_its_code_after_the_call(run):
    r = run("""
        class Loops(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                while True:
                    pass
        class SaysYes(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if func is torch.allclose:
                    return True
                return super().__torch_function__(func, types, args, kwargs)
        def loops(s, h):
            return torch.zeros(s.shape[0], s.shape[1], h.shape[1]).as_subclass(Loops)
        def says_yes(s, h):
            return torch.zeros(s.shape[0], s.shape[1], h.shape[1]).as_subclass(SaysYes)
        start = time.perf_counter()
        looped = checks.check_dot_score(loops)
        took = time.perf_counter() - start
        yes = checks.check_dot_score(says_yes)
        inside = checks.in_model("dot_score", loops)
        out(looped=looped.message, took=took, yes=yes.ok, yes_msg=yes.message,
            inside=inside.message)
    """)
    assert "returned a Loops, a subclass of torch.Tensor" in r["looped"], r["looped"]
    assert r["took"] < 10
    assert not r["yes"] and "SaysYes" in r["yes_msg"], r["yes_msg"]
    assert "returned a Loops" in r["inside"], r["inside"]


def test_what_a_returned_object_does_after_the_call_has_a_budget(run):
    r = run("""
        sandbox.CHECK_BUDGET_S = 3.0
        class Endless(tuple):
            def __len__(self):
                while True:
                    pass
        def decode_step(s_prev, h, y_prev, score, cell):
            return Endless((s_prev, s_prev, s_prev))
        start = time.perf_counter()
        result = checks.check_decode_step(decode_step)
        out(message=result.message, took=time.perf_counter() - start)
    """)
    assert r["took"] < 15, r
    assert "Endless" in r["message"] or "took longer than 3 s" in r["message"], r["message"]


def test_a_replaced_method_of_a_torch_nn_class_is_put_back_and_named(run):
    r = run("""
        from torch import nn
        linear, cell = nn.Linear.forward, nn.GRUCell.forward
        def patches(s, h):
            nn.Linear.forward = lambda self, x: x * 0
            nn.GRUCell.forward = lambda self, x, hx=None: x * 0
            nn.functional.linear = lambda *a, **k: None
            return right(s, h)
        bad = checks.check_dot_score(patches)
        layer = nn.Linear(2, 2)
        out(bad=bad.message, ok=bad.ok, back=nn.Linear.forward is linear
            and nn.GRUCell.forward is cell, works=bool(layer(torch.ones(1, 2)).abs().sum() > 0),
            good=checks.in_model("dot_score", right).ok)
    """)
    assert not r["ok"], r["bad"]
    for name in ("Linear.forward`", "GRUCell.forward`", "`torch.nn.functional.linear`"):
        assert name in r["bad"], (name, r["bad"])
    assert r["back"] and r["works"] and r["good"]


def test_a_replaced_builtin_is_put_back_and_named(run):
    r = run("""
        import builtins
        length = builtins.len
        def patches(s, h):
            builtins.len = lambda x: 0
            builtins.sorted = None
            return right(s, h)
        bad = checks.check_dot_score(patches)
        out(bad=bad.message, ok=bad.ok, back=builtins.len is length and len([1, 2]) == 2,
            sorted=sorted([2, 1]), good=checks.check_dot_score(right).ok)
    """)
    assert not r["ok"] and "`builtins.len`" in r["bad"] and "`builtins.sorted`" in r["bad"], r
    assert "0 hidden examples" not in r["bad"]
    assert r["back"] and r["sorted"] == [1, 2] and r["good"]


def test_a_replaced_function_of_math_or_numpy_is_put_back_and_named(run):
    r = run("""
        import math
        import numpy as np
        root, exp = math.sqrt, np.exp
        def patches(s, h):
            math.sqrt = lambda x: 1.0
            np.exp = lambda x: x
            return right(s, h)
        bad = checks.check_dot_score(patches)
        out(bad=bad.message, ok=bad.ok, back=math.sqrt is root and np.exp is exp,
            good=checks.check_dot_score(right).ok)
    """)
    assert not r["ok"] and "`math.sqrt`" in r["bad"] and "`numpy.exp`" in r["bad"], r["bad"]
    assert r["back"] and r["good"]


def test_a_replaced_or_deleted_entry_of_sys_modules_is_put_back_and_named(run):
    r = run("""
        import math, types
        def patches(s, h):
            sys.modules["attnlab.attention"] = types.ModuleType("attnlab.attention")
            sys.modules.pop("math", None)
            return right(s, h)
        bad = checks.check_dot_score(patches)
        import attnlab.attention as again
        out(bad=bad.message, ok=bad.ok, back=again is attention
            and sys.modules.get("math") is math, good=checks.check_dot_score(right).ok)
    """)
    assert not r["ok"], r["bad"]
    assert "`sys.modules['attnlab.attention']`" in r["bad"], r["bad"]
    assert "`sys.modules['math']`" in r["bad"], r["bad"]
    assert r["back"] and r["good"]


def test_replaced_display_and_exception_hooks_are_put_back_and_named(run):
    r = run("""
        hooks = sys.displayhook, sys.excepthook
        def patches(s, h):
            sys.displayhook = lambda value: None
            sys.excepthook = lambda *a: None
            return right(s, h)
        bad = checks.check_dot_score(patches)
        out(bad=bad.message, ok=bad.ok, back=(sys.displayhook, sys.excepthook) == hooks,
            good=checks.check_dot_score(right).ok)
    """)
    assert not r["ok"] and "`sys.displayhook`" in r["bad"], r["bad"]
    assert "`sys.excepthook`" in r["bad"], r["bad"]
    assert r["back"] and r["good"]


def test_the_working_directory_umask_matmul_precision_and_denormals_are_put_back(run):
    r = run("""
        import struct
        tiny = struct.unpack("<d", b"\\x01" + bytes(7))[0]
        cwd, mask = os.getcwd(), os.umask(0o022)
        os.umask(mask)
        def meddles(s, h):
            os.chdir("/")
            os.umask(0)
            torch.set_float32_matmul_precision("medium")
            torch.set_flush_denormal(True)
            return right(s, h)
        session = sandbox.Session()
        session.call(meddles, torch.ones(1, 2, 3), torch.ones(1, 4, 3))
        now = os.umask(0o022)
        os.umask(now)
        bad = checks.check_dot_score(meddles)
        out(changes=" ".join(session.changes), ok=bad.ok, cwd=os.getcwd() == cwd,
            mask=now == mask, precision=torch.get_float32_matmul_precision(),
            denormal=tiny * 3.0 != 0.0, good=checks.check_dot_score(right).ok)
    """)
    for words in ("the working directory", "the umask", "`torch.set_float32_matmul_precision`",
                  "`torch.set_flush_denormal`"):  # fmt: skip
        assert words in r["changes"], (words, r["changes"])
    assert not r["ok"] and r["cwd"] and r["mask"] and r["good"]
    assert r["precision"] == "highest" and r["denormal"]


def test_a_blocked_alarm_signal_is_unblocked_named_and_later_budgets_still_ring(run):
    r = run("""
        import signal
        def blocks(s, h):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            return right(s, h)
        session = sandbox.Session()
        session.call(blocks, torch.ones(1, 2, 3), torch.ones(1, 4, 3))
        after = signal.SIGALRM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        def sleeps(s, h):
            time.sleep(20)
        start = time.perf_counter()
        slept = checks.check_dot_score(sleeps)
        took = time.perf_counter() - start
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # the notebook's own
        start = time.perf_counter()
        blocked_before = checks.check_dot_score(sleeps)
        took_blocked = time.perf_counter() - start
        kept = signal.SIGALRM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        out(changes=" ".join(session.changes), after=after, took=took, took_blocked=took_blocked,
            message=slept.message, blocked_message=blocked_before.message, kept=kept)
    """)
    assert "the signal mask (`signal.pthread_sigmask`)" in r["changes"], r["changes"]
    assert not r["after"]
    assert "took longer than 2 s" in r["message"] and r["took"] < 10, r
    assert "took longer than 2 s" in r["blocked_message"] and r["took_blocked"] < 10, r
    assert r["kept"]  # blocked by the notebook before the check: blocked again after


def test_lowered_resource_limits_are_put_back_or_named_when_they_cannot_be(run):
    r = run("""
        import resource
        N = resource.RLIMIT_NOFILE
        soft, hard = resource.getrlimit(N)
        stack = resource.getrlimit(resource.RLIMIT_STACK)
        def lowers_soft(s, h):
            resource.setrlimit(N, (16, hard))
            resource.setrlimit(resource.RLIMIT_STACK, (1 << 20, stack[1]))
            return right(s, h)
        session = sandbox.Session()
        session.call(lowers_soft, torch.ones(1, 2, 3), torch.ones(1, 4, 3))
        back = resource.getrlimit(N) == (soft, hard) and resource.getrlimit(
            resource.RLIMIT_STACK) == stack
        if os.geteuid() == 0:  # root may raise a hard limit again: a student's kernel may not
            os.setresuid(65534, 65534, 65534)
        def lowers_hard(s, h):
            resource.setrlimit(N, (64, 128))
            return right(s, h)
        lowered = sandbox.Session()
        lowered.call(lowers_hard, torch.ones(1, 2, 3), torch.ones(1, 4, 3))
        out(changes=" ".join(session.changes), back=back, now=resource.getrlimit(N),
            message=lowered.changed_message())
    """)
    assert "`RLIMIT_NOFILE`" in r["changes"] and "`RLIMIT_STACK`" in r["changes"], r["changes"]
    assert r["back"]
    assert "lowered the hard resource limit `RLIMIT_NOFILE`" in r["message"], r["message"]
    assert "restart the kernel" in r["message"] and r["now"] == [128, 128], r


def test_gc_switch_interval_excepthook_import_paths_and_print_options_are_put_back(run):
    r = run("""
        import gc, threading
        from torch import _tensor_str
        interval, hook = sys.getswitchinterval(), threading.excepthook
        path, meta = tuple(sys.path), tuple(sys.meta_path)
        options = dict(vars(_tensor_str.PRINT_OPTS))
        class Finder:
            def find_spec(self, *a):
                return None
        def meddles(s, h):
            gc.disable()
            sys.setswitchinterval(1.0)
            threading.excepthook = lambda args: None
            sys.path.insert(0, "/tmp/elsewhere")
            sys.meta_path.insert(0, Finder())
            torch.set_printoptions(precision=1, sci_mode=True)
            return right(s, h)
        session = sandbox.Session()
        session.call(meddles, torch.ones(1, 2, 3), torch.ones(1, 4, 3))
        back = dict(gc=gc.isenabled(), interval=sys.getswitchinterval() == interval,
                    hook=threading.excepthook is hook, path=tuple(sys.path) == path,
                    meta=tuple(sys.meta_path) == meta,
                    options=dict(vars(_tensor_str.PRINT_OPTS)) == options)
        out(changes=" ".join(session.changes), back=back, good=checks.check_dot_score(right).ok)
    """)
    for words in ("`gc.disable`", "`sys.setswitchinterval`", "`threading.excepthook`",
                  "`sys.path`", "`sys.meta_path`", "`torch.set_printoptions`"):  # fmt: skip
        assert words in r["changes"], (words, r["changes"])
    assert all(r["back"].values()), r["back"]
    assert r["good"]


def test_python_and_numpy_seeds_set_inside_a_call_leave_no_trace():
    import random

    import numpy as np

    from attnlab.guard.sandbox import Session

    random.seed(1)
    np.random.seed(1)
    expected = (random.random(), float(np.random.rand()))
    random.seed(1)
    np.random.seed(1)

    def reseeds():
        random.seed(99)
        np.random.seed(99)

    Session().call(reseeds)
    assert (random.random(), float(np.random.rand())) == expected
