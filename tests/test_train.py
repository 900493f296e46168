"""attnlab.training: the one loop (fit), reproducible step-counted training, early stop, the
recipes, the command line, the card."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, replace
from pathlib import Path

import pytest
import torch

import attnlab
from attnlab.__main__ import main as command_line
from attnlab.models import catalogue
from attnlab.models.registry import MODEL_KINDS
from attnlab.text.tasks import TASKS, dates
from attnlab.training import checkpoints, runs
from attnlab.training import loop as train
from attnlab.training.batches import encode_pairs
from attnlab.training.config import CORPUS_TASKS, TrainConfig, default_configs, recipe
from attnlab.training.evaluate import evaluate
from attnlab.training.loop import fit

TINY = TrainConfig(lr=1e-2, max_steps=6, eval_every=3, n_train=300, n_valid=40, batch_size=16)


def main(argv: list[str]) -> int:
    """``python -m attnlab train ARGV``."""
    return command_line(["train", *argv])


def test_encode_pairs_builds_teacher_forcing_tensors():
    task = TASKS["dates"]
    data = encode_pairs(
        [("3 May 1979", "1979-05-03"), ("1.1.2000", "2000-01-01")], task.src_vocab, task.tgt_vocab
    )
    src_v, tgt_v = task.src_vocab, task.tgt_vocab
    assert data["src"].shape == (2, 11) and data["src_len"].tolist() == [11, 9]
    assert src_v.decode(data["src"][0].tolist()) == "3 may 1979"  # normalised like a typed text
    assert data["src"][0, 10] == src_v.eos and data["src"][1, 9:].tolist() == [0, 0]
    assert data["tgt_in"][0, 0] == tgt_v.sos
    assert torch.equal(data["tgt_in"][:, 1:], data["tgt_out"][:, :-1])  # shifted by one
    assert data["tgt_out"][0, -1] == tgt_v.eos


@pytest.mark.parametrize("kind", ["rnnencdec", "rnnsearch", "transformer"])
def test_fit_returns_the_model_and_its_history(kind):
    model, history = fit(kind, "dates", config=replace(TINY, target=None), progress=False)
    assert model.kind == kind and not model.training
    assert history["step"] == [3, 6] and history["steps"] == 6
    assert len(history["loss"]) == len(history["accuracy"]) == len(history["seconds"]) == 2
    assert all(0.0 <= a <= 1.0 for a in history["accuracy"]) and history["reached"] is None


def test_fit_is_reproducible_from_its_seed():
    a, ha = fit("rnnsearch", "dates", config=TINY, progress=False)
    b, hb = fit("rnnsearch", "dates", config=TINY, progress=False)
    c, _ = fit("rnnsearch", "dates", config=TINY, seed=1, progress=False)
    assert ha["loss"] == hb["loss"]
    for x, y in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(x, y)
    assert any(not torch.equal(x, z) for x, z in zip(a.parameters(), c.parameters(), strict=False))


def test_fit_stops_early_at_the_target(monkeypatch):
    monkeypatch.setattr(train, "evaluate", lambda model, pairs: {"exact_match": 0.6})
    _, history = fit("rnnsearch", "dates", config=TINY, target=0.5, progress=False)
    assert history["steps"] == 3 and history["reached"] == 3


@pytest.mark.parametrize(
    "override",
    [{"max_steps": -5}, {"max_steps": 0}, {"target": 2}, {"target": math.nan}, {"target": 0},
     {"seed": -1}, {"config": replace(TINY, batch_size=0)}, {"config": replace(TINY, lr=math.nan)}],
)  # fmt: skip
def test_fit_refuses_bad_settings_before_training(override, monkeypatch):
    monkeypatch.setattr(train, "_train", lambda *a: pytest.fail("trained on bad settings"))
    with pytest.raises(ValueError) as err:
        fit("rnnsearch", "dates", **{"config": TINY, **override})
    assert "\n" not in str(err.value)


def test_fit_learns():
    cfg = replace(TINY, max_steps=40, eval_every=20, batch_size=64, n_train=2000, target=None)
    _, history = fit("rnnsearch", "dates", config=cfg, progress=False)
    assert history["loss"][-1] < 0.7 * history["loss"][0]


@pytest.mark.parametrize("fails", [False, True])
def test_fit_trains_on_its_thread_count_and_restores_the_callers(monkeypatch, fails):
    seen = []  # the thread count while training

    def spy(*args):
        seen.append(torch.get_num_threads())
        if fails:
            raise RuntimeError("training broke")
        return real_train(*args)

    real_train = train._train
    monkeypatch.setattr(train, "_train", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # not the config's count (the test fixture pins 1)
    try:
        config = replace(TINY, max_steps=1, threads=1)
        if fails:
            with pytest.raises(RuntimeError, match="training broke"):
                fit("rnnsearch", "dates", config=config, progress=False)
        else:
            fit("rnnsearch", "dates", config=config, progress=False)
        assert seen == [1]  # trained on the config's one thread
        assert torch.get_num_threads() == 2  # and the caller's two are back, even after an error
    finally:
        torch.set_num_threads(before)


def test_evaluate_counts_exact_and_token_matches():
    model = attnlab.load("rnnsearch-dates")
    pairs = [
        ("3 May 1979", "1979-05-03"),
        ("3 May 1979", "1979-05-04"),
        ("3 May 1979", "2000-01-01"),
    ]
    scores = evaluate(model, pairs)
    assert scores["exact_match"] == pytest.approx(1 / 3)
    # The model writes 1979-05-03 each time: count its right characters by position.
    right = sum(a == b for _, y in pairs for a, b in zip("1979-05-03", y, strict=False))
    assert right == 10 + 9 + 4
    assert scores["token_accuracy"] == pytest.approx(right / 30)


@pytest.mark.parametrize("batch_size", [1, 7, 1000])
def test_evaluate_scores_what_translate_writes(batch_size):
    """The held-out score decodes in padded batches: whatever the batch size, each output is
    the model's own translation of its source (dates of 6 to 28 characters padded together)."""
    model = attnlab.load("transformer-dates")
    sources = [source for source, _ in dates(40, seed=2_000_000)]
    own = [(source, model.translate(source)) for source in sources]
    assert evaluate(model, own, batch_size=batch_size) == {
        "exact_match": 1.0,
        "token_accuracy": 1.0,
    }
    off = [
        (source, "0" + out[1:]) if k % 4 == 0 else (source, out)
        for k, (source, out) in enumerate(own)
    ]
    assert evaluate(model, off, batch_size=batch_size)["exact_match"] == 30 / 40


def test_the_shipped_recipes_are_step_budgets():
    for kind in ("rnnencdec", "rnnsearch", "transformer"):
        for task in ("dates", "reverse"):
            model_cfg, train_cfg = default_configs(kind, task)
            assert train_cfg.max_steps > 0 and train_cfg.threads >= 1
            assert model_cfg.max_src_len == TASKS[task].max_src_len
    # the length experiment gives both RNNs the same budget
    assert default_configs("rnnencdec", "reverse")[1] == default_configs("rnnsearch", "reverse")[1]
    for name in runs.WORD_MODELS:  # one config class: the word recipes differ in values only
        run = recipe(name)
        assert type(run.train) is TrainConfig and run.train.keep_best and run.train.target is None
        assert type(run.model) is MODEL_KINDS[run.kind].config_class
    with pytest.raises(ValueError, match="no recipe for rnnencdec on 'en-de'"):
        default_configs("rnnencdec", "en-de")


#: A run of the command line that takes about a second.
QUICK = [
    "--max-steps",
    "2",
    "--n-train",
    "64",
    "--n-valid",
    "8",
    "--n-test",
    "8",
    "--batch-size",
    "8",
]


def test_the_command_line_writes_a_loadable_checkpoint_and_card(tmp_path, capsys):
    assert main(["--model", "rnnsearch", "--task", "dates", *QUICK, "--out", str(tmp_path)]) == 0
    card = json.loads((tmp_path / "rnnsearch-dates.json").read_text())
    for key in ("config", "src_vocab", "tgt_vocab", "seed", "steps", "train_seconds",
                "heldout_accuracy", "torch_version", "checksum"):  # fmt: skip
        assert key in card
    assert card["steps"] == 2 and card["torch_version"] == torch.__version__
    model = checkpoints.load("rnnsearch-dates", directory=tmp_path)
    pairs = dates(card["heldout_examples"], seed=card["heldout_seed"])
    assert evaluate(model, pairs)["exact_match"] == card["heldout_accuracy"]
    out = capsys.readouterr().out
    assert f"writing checkpoints to {tmp_path}" in out and "attnlab.load('rnnsearch-dates'" in out


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A private XDG_DATA_HOME; the shipped folder's state, to prove nothing in it changes."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "attnlab" / "checkpoints"


def shipped_state() -> dict:
    return {p.name: p.stat().st_mtime_ns for p in checkpoints.CHECKPOINT_DIR.iterdir()}


def test_by_default_training_writes_outside_the_package(home, capsys):
    before = shipped_state()
    assert main(["--model", "rnnencdec", *QUICK]) == 0
    assert shipped_state() == before
    assert checkpoints.load("rnnenc-dates", directory=home).card["steps"] == 2
    assert str(home) in capsys.readouterr().out


def test_writing_into_the_shipped_folder_needs_the_flag(home, capsys):
    before = shipped_state()
    with pytest.raises(SystemExit) as exit:
        main(["--model", "rnnsearch", "--max-steps", "2", "--out", str(checkpoints.CHECKPOINT_DIR)])
    assert exit.value.code == 2 and "--replace-shipped" in one_line(capsys.readouterr().err)
    assert shipped_state() == before


def test_replace_shipped_writes_the_package_folder(monkeypatch, tmp_path):
    """The flag `make train` passes (the package folder is swapped for a copy here)."""
    monkeypatch.setattr(checkpoints, "CHECKPOINT_DIR", tmp_path.resolve())
    assert main(["--model", "transformer", *QUICK, "--replace-shipped"]) == 0
    assert checkpoints.load("transformer-dates").card["steps"] == 2
    assert "--replace-shipped" in Path(__file__).parents[1].joinpath("Makefile").read_text()


def one_line(err: str) -> str:
    """The error line of an argparse/CLI failure (its usage lines aside)."""
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err
    return lines[0]


BAD_ARGS = {
    "negative steps": (["--max-steps", "-5"], "--max-steps"),
    "zero steps": (["--max-steps", "0"], "--max-steps"),
    "steps not a number": (["--max-steps", "lots"], "--max-steps"),
    "unicode steps": (["--max-steps", "３.５"], "--max-steps"),
    "empty steps": (["--max-steps", ""], "--max-steps"),
    "huge steps": (["--max-steps", str(10**30)], "--max-steps"),
    "target above 1": (["--target", "2"], "--target"),
    "target 0": (["--target", "0"], "--target"),
    "target nan": (["--target", "nan"], "--target"),
    "target inf": (["--target", "inf"], "--target"),
    "negative target": (["--target", "-0.5"], "--target"),
    "huge seed": (["--seed", str(10**30)], "--seed"),
    "negative seed": (["--seed", "-1"], "--seed"),
    "zero batch": (["--batch-size", "0"], "--batch-size"),
    "negative examples": (["--n-train", "-3"], "--n-train"),
    "unknown model": (["--model", "lstm"], "--model"),
    "old spelling": (["--model", "rnnenc"], "--model"),
    "unknown task": (["--task", "klingon"], "--task"),
    "html task": (["--task", "<b>"], "--task"),
    "mathtext model": (["--model", "$x$"], "--model"),
    "control characters": (["--out", "\x00"], "--out"),
    "a million and one examples": (["--n-train", str(10**6 + 1)], "--n-train"),
    "both outputs": (["--replace-shipped", "--out", "x"], "--replace-shipped"),
    "target and no target": (["--target", "0.5", "--no-target"], "--no-target"),
}


@pytest.mark.parametrize(("args", "names"), BAD_ARGS.values(), ids=BAD_ARGS.keys())
def test_bad_arguments_are_refused_before_training(args, names, home, capsys, monkeypatch):
    monkeypatch.setattr(runs, "fit", lambda *a, **k: pytest.fail("trained on bad arguments"))
    argv = args if "--model" in args else ["--model", "rnnsearch", *args]
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    assert names in one_line(capsys.readouterr().err)
    assert not home.exists()


def test_the_command_line_needs_a_model_or_all(capsys):
    for argv in ([], ["--all", "--model", "rnnsearch"]):
        with pytest.raises(SystemExit) as exit:
            main(argv)
        assert exit.value.code == 2 and "--all" in one_line(capsys.readouterr().err)


def test_a_file_in_the_way_is_one_line_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(runs, "fit", lambda *a, **k: pytest.fail("trained before checking"))
    (tmp_path / "file").write_text("in the way")
    (tmp_path / "dir" / "rnnsearch-dates.json").mkdir(parents=True)
    for out in ("file", "file/below", "dir"):
        with pytest.raises(SystemExit) as exit:
            main(["--model", "rnnsearch", "--out", str(tmp_path / out)])
        assert exit.value.code == 2 and str(tmp_path / out) in one_line(capsys.readouterr().err)


def test_a_folder_it_cannot_write_is_one_line_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(runs, "fit", lambda *a, **k: pytest.fail("trained before checking"))
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    if os.access(locked, os.W_OK):  # root writes anywhere: refuse the write the way a mount would

        def refused(**kwargs):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(tempfile, "NamedTemporaryFile", refused)
    with pytest.raises(SystemExit) as exit:
        main(["--model", "rnnsearch", "--out", str(locked)])
    assert exit.value.code == 2 and "cannot write" in one_line(capsys.readouterr().err)


def test_ctrl_c_while_training_writes_nothing_and_says_so(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "fit", interrupted)
    assert main(["--model", "rnnsearch", "--out", str(tmp_path)]) == 130
    err = capsys.readouterr().err.strip()
    assert "interrupted" in err and "\n" not in err
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_saving_leaves_the_old_checkpoint_and_no_temporary_file(tmp_path, monkeypatch):
    assert main(["--model", "rnnsearch", *QUICK, "--out", str(tmp_path)]) == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    replace = os.replace

    def interrupt_the_card(src, dst):  # the weights are in; Ctrl+C before the card is
        if str(dst).endswith(".json"):
            raise KeyboardInterrupt
        replace(src, dst)

    monkeypatch.setattr(os, "replace", interrupt_the_card)
    assert main(["--model", "rnnsearch", *QUICK, "--seed", "1", "--out", str(tmp_path)]) == 130
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert checkpoints.load("rnnsearch-dates", directory=tmp_path).card["seed"] == 0


def test_fit_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(checkpoints, "save", lambda *a, **k: pytest.fail("fit saved"))
    fit("rnnsearch", "dates", config=replace(TINY, max_steps=1), progress=False)
    assert list(tmp_path.iterdir()) == []


def test_a_live_plot_passed_in_updates_one_picture_in_place(monkeypatch):
    import IPython.display

    from attnlab.pictures.training_plots import LivePlot

    shown, updates = [], []

    class Handle:
        def update(self, obj):
            updates.append(obj)

    def display(obj, display_id=False):
        shown.append(obj)
        return Handle()

    monkeypatch.setattr(IPython.display, "display", display)
    live = LivePlot("rnnsearch on dates")
    cfg = replace(TINY, target=None)
    _, history = fit("rnnsearch", "dates", config=cfg, observer=live, progress=False)
    assert len(shown) == 1 and len(updates) == len(history["step"]) == 2  # one picture
    for image in (*shown, *updates):
        assert image.data[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_observer_hears_every_step_and_every_measurement():
    heard = []

    class Observer:
        def step(self, step, loss):
            heard.append(("step", step))

        def measured(self, history, target):
            heard.append(("measured", history["step"][-1], target))

        def close(self):
            heard.append(("close",))

    fit(
        "rnnsearch", "dates", config=replace(TINY, target=0.99), observer=Observer(), progress=False
    )
    steps = [("step", k) for k in range(1, 7)]
    assert heard == [
        *steps[:3],
        ("measured", 3, 0.99),
        *steps[3:],
        ("measured", 6, 0.99),
        ("close",),
    ]


def test_the_training_code_imports_no_picture_and_no_command_line():
    code = (
        "import sys, attnlab.training.runs; "
        "print(' '.join(sorted({m.split('.')[1] for m in sys.modules if m.startswith('attnlab.')})))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    folders = set(run.stdout.split())
    assert "training" in folders, run.stderr
    assert not folders & {"pictures", "experiments", "__main__", "lecture", "widgets", "checks"}, (
        folders
    )


def test_python_m_attnlab_train_refuses_bad_arguments_without_a_traceback(attnlab_cli):
    run = attnlab_cli("train", "--model", "rnnsearch", "--max-steps", "-5")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "python -m attnlab train" in run.stderr and "--max-steps" in one_line(run.stderr)


def test_the_recipes_cover_every_shipped_model_and_match_its_card():
    """Every shipped model has a recipe, and its card says it was trained by that recipe."""
    fields = set(asdict(TrainConfig()))
    for name in catalogue.names():
        run, card = recipe(name), checkpoints.load_card(name)
        assert (card["kind"], card["task"]) == (run.kind, run.task), name
        assert MODEL_KINDS[run.kind].config_class(**card["config"]) == run.model, name
        trained = {k: v for k, v in card["train"].items() if k in fields}
        assert trained == {k: v for k, v in asdict(run.train).items() if k in trained}, name
        assert len(trained) >= 14, name  # the card names most of the recipe
    word = [n for n in catalogue.names() if catalogue.entry(n).task in CORPUS_TASKS]
    assert tuple(word) == runs.WORD_MODELS and runs.DATE_MODELS == catalogue.names(task="dates")


def test_all_trains_every_shipped_dates_recipe(tmp_path, monkeypatch):
    jobs = []
    monkeypatch.setattr(runs, "train_and_save", lambda *a, **k: jobs.append(a))
    assert main(["--all", "--max-steps", "7", "--out", str(tmp_path)]) == 0
    assert [name for name, _, _ in jobs] == list(runs.DATE_MODELS)
    assert all(run.train.max_steps == 7 for _, _, run in jobs)
    assert [run.model for _, _, run in jobs] == [recipe(n).model for n in runs.DATE_MODELS]


def test_the_length_models_train_by_their_recipes(tmp_path, monkeypatch):
    jobs = []
    monkeypatch.setattr(runs, "train_and_save", lambda *a, **k: jobs.append(a))
    runs.train_length_models(tmp_path, max_steps=5)
    assert [name for name, _, _ in jobs] == list(runs.LENGTH_MODELS)
    assert runs.LENGTH_MODELS == catalogue.names(task="reverse")
    lengths = {name: run.train.train_length for name, _, run in jobs}
    assert lengths["rnnsearch-reverse-30"] == [5, 30] and lengths["rnnsearch-reverse"] == [5, 60]
    assert all(run.train.max_steps == 5 and out == tmp_path for _, out, run in jobs)
