"""attnlab.train: reproducible step-counted training, early stop, the command line, the card."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

import attnlab
from attnlab import checkpoints
from attnlab.data import TASKS, dates
from attnlab.train import TrainConfig, default_configs, encode_pairs, evaluate, fit, main

TINY = TrainConfig(lr=1e-2, max_steps=6, eval_every=3, n_train=300, n_valid=40, batch_size=16)


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
    model, history = fit(
        kind, "dates", config=replace(TINY, target=None), progress=False, plot=False
    )
    assert model.kind == kind and not model.training
    assert history["step"] == [3, 6] and history["steps"] == 6
    assert len(history["loss"]) == len(history["accuracy"]) == len(history["seconds"]) == 2
    assert all(0.0 <= a <= 1.0 for a in history["accuracy"]) and history["reached"] is None


def test_fit_is_reproducible_from_its_seed():
    a, ha = fit("rnnsearch", "dates", config=TINY, progress=False, plot=False)
    b, hb = fit("rnnsearch", "dates", config=TINY, progress=False, plot=False)
    c, _ = fit("rnnsearch", "dates", config=TINY, seed=1, progress=False, plot=False)
    assert ha["loss"] == hb["loss"]
    for x, y in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(x, y)
    assert any(not torch.equal(x, z) for x, z in zip(a.parameters(), c.parameters(), strict=False))


def test_fit_stops_early_at_the_target():
    _, history = fit("rnnsearch", "dates", config=TINY, target=0.0, progress=False, plot=False)
    assert history["steps"] == 3 and history["reached"] == 3


def test_fit_learns():
    cfg = replace(TINY, max_steps=40, eval_every=20, batch_size=64, n_train=2000, target=None)
    _, history = fit("rnnsearch", "dates", config=cfg, progress=False, plot=False)
    assert history["loss"][-1] < 0.7 * history["loss"][0]


def test_fit_restores_the_thread_count():
    before = torch.get_num_threads()
    fit(
        "rnnsearch",
        "dates",
        config=replace(TINY, max_steps=1, threads=1),
        progress=False,
        plot=False,
    )
    assert torch.get_num_threads() == before


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


def test_the_shipped_recipes_are_step_budgets():
    for kind in ("rnnencdec", "rnnsearch", "transformer"):
        for task in ("dates", "reverse"):
            model_cfg, train_cfg = default_configs(kind, task)
            assert train_cfg.max_steps > 0 and train_cfg.threads >= 1
            assert model_cfg.max_src_len == TASKS[task].max_src_len
    # the length experiment gives both RNNs the same budget
    assert default_configs("rnnencdec", "reverse")[1] == default_configs("rnnsearch", "reverse")[1]


def test_the_command_line_writes_a_loadable_checkpoint_and_card(tmp_path, capsys):
    main(["--model", "rnnsearch", "--task", "dates", "--max-steps", "2", "--out", str(tmp_path)])
    card = json.loads((tmp_path / "rnnsearch-dates.json").read_text())
    for key in ("config", "src_vocab", "tgt_vocab", "seed", "steps", "train_seconds",
                "heldout_accuracy", "torch_version"):  # fmt: skip
        assert key in card
    assert card["steps"] == 2 and card["torch_version"] == torch.__version__
    model = checkpoints.load("rnnsearch-dates", directory=tmp_path)
    pairs = dates(card["heldout_examples"], seed=card["heldout_seed"])
    assert evaluate(model, pairs)["exact_match"] == card["heldout_accuracy"]
    assert "rnnsearch-dates" in capsys.readouterr().out


def test_the_command_line_needs_a_model():
    with pytest.raises(SystemExit):
        main([])


def test_in_a_notebook_fit_updates_one_picture_in_place(monkeypatch):
    import IPython.display

    from attnlab import train

    shown, updates = [], []

    class Handle:
        def update(self, obj):
            updates.append(obj)

    def display(obj, display_id=False):
        shown.append(obj)
        return Handle()

    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr(train, "_in_notebook", lambda: True)
    _, history = fit("rnnsearch", "dates", config=replace(TINY, target=None))
    assert len(shown) == 1 and len(updates) == len(history["step"]) == 2  # one picture
    for image in (*shown, *updates):
        assert image.data[:8] == b"\x89PNG\r\n\x1a\n"
