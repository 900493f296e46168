"""The length experiment: shipped results have the promised shape and come from the models."""

from __future__ import annotations

import json

import pytest

import attnlab
from attnlab.__main__ import main
from attnlab.experiments import length, length_run
from attnlab.experiments.length import BINS, load_results
from attnlab.experiments.length_run import measure
from attnlab.training.checkpoints import CHECKPOINT_DIR


@pytest.fixture(scope="module")
def results():
    return load_results()


def test_results_have_bins_models_and_config(results):
    assert set(results) >= {"bins", "models", "config"}
    bins = results["bins"]
    assert bins[0][0] == 5 and bins[-1][1] == 60
    for (lo, hi), (lo2, _) in zip(bins, bins[1:], strict=False):
        assert lo <= hi and lo2 == hi + 1  # contiguous, no gaps
    assert {"rnnenc-reverse", "rnnsearch-reverse"} <= set(results["models"])
    for curves in results["models"].values():
        for metric in ("exact_match", "token_accuracy"):
            assert len(curves[metric]) == len(bins)
            assert all(0.0 <= v <= 1.0 for v in curves[metric])
        # a whole string right means every token right
        assert all(
            e <= t + 1e-9
            for e, t in zip(curves["exact_match"], curves["token_accuracy"], strict=False)
        )


def test_both_models_had_the_same_budget(results):
    runs = results["config"]["models"]
    assert runs["rnnenc-reverse"]["steps"] == runs["rnnsearch-reverse"]["steps"]
    assert runs["rnnenc-reverse"]["train_lengths"] == runs["rnnsearch-reverse"]["train_lengths"]


def test_attention_holds_up_on_long_inputs(results):
    """The paper's finding: without attention, accuracy falls with length; with it, less so."""
    enc = results["models"]["rnnenc-reverse"]["exact_match"]
    search = results["models"]["rnnsearch-reverse"]["exact_match"]
    assert enc[-1] < enc[0]
    assert search[-1] > enc[-1] and search[len(BINS) // 2] > enc[len(BINS) // 2]


def test_results_are_what_the_shipped_models_score(results, tmp_path, capsys):
    """Re-measuring every shipped model (no training) gives the shipped numbers."""
    main(["length", "--eval-only", "--out", str(tmp_path / "again.json")])
    again = load_results(tmp_path / "again.json")
    assert again["models"] == results["models"] and again["bins"] == results["bins"]
    assert "wrote" in capsys.readouterr().out


def test_measure_one_bin():
    model = attnlab.load("rnnsearch-reverse-30")
    got = measure(model, bins=[[5, 6]], per_bin=50)
    assert set(got) == {"exact_match", "token_accuracy"} and len(got["exact_match"]) == 1
    assert got["exact_match"][0] >= 0.9  # short strings inside its training range


def test_missing_or_damaged_results_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.json"):
        load_results(tmp_path / "nothing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"bins": []}))
    with pytest.raises(ValueError, match="bad.json"):
        load_results(bad)


def test_the_results_file_ships_inside_the_package():
    assert length.RESULTS_FILE.parent.name == "results"
    assert length.RESULTS_FILE.parent.parent.name == "attnlab"


def test_the_short_trained_variants_were_trained_on_5_to_30(results):
    runs = results["config"]["models"]
    for name in ("rnnenc-reverse-30", "rnnsearch-reverse-30"):
        assert runs[name]["train_lengths"] == [5, 30]
        assert runs[name]["steps"] == runs["rnnsearch-reverse"]["steps"]


@pytest.mark.parametrize(
    "args",
    [
        ["--checkpoints", str(CHECKPOINT_DIR)],  # training into the shipped folder
        ["--eval-only", "--out", str(length.RESULTS_FILE)],  # over the shipped results
        ["--max-steps", "-5"],
        ["--out", "\x00"],
    ],
)
def test_replacing_shipped_files_needs_the_flag_and_bad_arguments_are_refused(
    args, capsys, monkeypatch, tmp_path
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    from attnlab.training import runs

    monkeypatch.setattr(runs, "train_length_models", lambda *a, **k: pytest.fail("trained"))
    monkeypatch.setattr(length_run, "run", lambda **k: pytest.fail("ran without the flag"))
    with pytest.raises(SystemExit) as exit:
        main(["length", *args])
    assert exit.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1


def test_without_the_flag_it_trains_into_the_users_folder(monkeypatch, tmp_path):
    from attnlab.training import runs

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    trained, measured = [], []
    monkeypatch.setattr(runs, "train_length_models", lambda *a, **k: trained.append((a, k)))
    monkeypatch.setattr(length_run, "run", lambda **k: measured.append(k))
    assert main(["length", "--max-steps", "3"]) == 0
    folder = tmp_path / "attnlab" / "checkpoints"
    assert trained == [((folder,), {"names": None, "max_steps": 3})]
    (call,) = measured
    assert call["checkpoint_dir"] == folder
    assert call["out"] == tmp_path / "attnlab" / "results" / "length.json"
