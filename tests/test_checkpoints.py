"""Shipped checkpoints: every one loads fast and small, is accurate, and is never unpickled."""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
import time

import pytest
import torch

import attnlab
from attnlab import checkpoints
from attnlab.checkpoints import CHECKPOINT_DIR, SHIPPED, CheckpointError
from attnlab.data import dates
from attnlab.train import TEST_SEED_OFFSET, evaluate

CARD_FIELDS = {
    "kind", "task", "config", "src_vocab", "tgt_vocab", "seed", "steps", "train_seconds",
    "heldout_accuracy", "torch_version", "weights_sha256",
}  # fmt: skip
KINDS = {"rnnenc": "rnnencdec", "rnnsearch": "rnnsearch", "transformer": "transformer"}


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_model_loads_small_and_fast(name):
    weights = CHECKPOINT_DIR / f"{name}.safetensors"
    assert weights.stat().st_size <= 1_000_000
    assert (CHECKPOINT_DIR / f"{name}.json").stat().st_size <= 1_000_000
    start = time.perf_counter()
    model = attnlab.load(name)
    seconds = time.perf_counter() - start
    assert seconds < 3.0  # the 0.3 s target is printed by benchmarks/training.py
    assert model.kind == KINDS[name.split("-")[0]]
    assert CARD_FIELDS <= set(model.card)
    assert model.card["task"] == name.split("-")[1]
    assert not model.training
    assert model.max_src_len == model.card["config"]["max_src_len"]
    assert model.src_vocab.to_list() == model.card["src_vocab"]


@pytest.mark.parametrize("name", ["rnnsearch-dates", "transformer-dates"])
def test_dates_models_are_right_on_99_percent_of_fresh_dates(name):
    model = attnlab.load(name)
    torch.manual_seed(0)
    fresh = dates(2000, seed=123_456)  # neither the training, validation nor card's seed
    assert evaluate(model, fresh)["exact_match"] >= 0.99
    assert model.card["heldout_accuracy"] >= 0.99


def test_card_accuracy_is_what_the_model_scores():
    """Re-measuring on the card's held-out examples gives the card's number."""
    model = attnlab.load("rnnenc-dates")
    card = model.card
    assert card["heldout_seed"] == TEST_SEED_OFFSET + card["seed"]
    pairs = dates(card["heldout_examples"], seed=card["heldout_seed"])
    assert evaluate(model, pairs)["exact_match"] == pytest.approx(card["heldout_accuracy"])


def test_unknown_name_lists_the_names():
    with pytest.raises(ValueError) as err:
        attnlab.load("rnnsearch-klingon")
    for name in SHIPPED:
        assert name in str(err.value)


@pytest.fixture
def copy_dir(tmp_path):
    for suffix in (".json", ".safetensors"):
        shutil.copy(CHECKPOINT_DIR / f"rnnsearch-dates{suffix}", tmp_path)
    return tmp_path


def test_a_copied_checkpoint_loads_by_path_and_by_folder(copy_dir):
    a = checkpoints.load(copy_dir / "rnnsearch-dates.safetensors")
    b = checkpoints.load("rnnsearch-dates", directory=copy_dir)
    assert a.translate("3 May 1979") == b.translate("3 May 1979") == "1979-05-03"


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b"\x00" * len(b),  # zeroed
        lambda b: b"not a checkpoint",  # garbage
        lambda b: b[:-100] + bytes(100),  # weights changed, header intact
    ],
)
def test_a_corrupted_weights_file_is_refused_naming_it(copy_dir, damage):
    path = copy_dir / "rnnsearch-dates.safetensors"
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(CheckpointError, match="rnnsearch-dates.safetensors"):
        checkpoints.load("rnnsearch-dates", directory=copy_dir)


def test_corrupted_weights_without_a_checksum_are_still_refused(copy_dir):
    card = json.loads((copy_dir / "rnnsearch-dates.json").read_text())
    del card["weights_sha256"]
    (copy_dir / "rnnsearch-dates.json").write_text(json.dumps(card))
    path = copy_dir / "rnnsearch-dates.safetensors"
    path.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(CheckpointError, match="rnnsearch-dates.safetensors"):
        checkpoints.load("rnnsearch-dates", directory=copy_dir)


def test_a_corrupted_card_is_refused_naming_it(copy_dir):
    card = copy_dir / "rnnsearch-dates.json"
    card.write_text("{ not json")
    with pytest.raises(CheckpointError, match="rnnsearch-dates.json"):
        checkpoints.load("rnnsearch-dates", directory=copy_dir)
    card.write_text(json.dumps({"kind": "rnnsearch", "config": {"no_such_field": 1}}))
    with pytest.raises(CheckpointError, match="rnnsearch-dates.json"):
        checkpoints.load("rnnsearch-dates", directory=copy_dir)


@pytest.mark.parametrize("missing", [".safetensors", ".json"])
def test_a_missing_file_is_named(copy_dir, missing):
    (copy_dir / f"rnnsearch-dates{missing}").unlink()
    with pytest.raises(FileNotFoundError, match=f"rnnsearch-dates\\{missing}"):
        checkpoints.load("rnnsearch-dates", directory=copy_dir)


def test_loading_never_unpickles(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a checkpoint was unpickled")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    monkeypatch.setattr(torch, "load", refuse)
    for name in SHIPPED:
        assert attnlab.load(name).kind
    # safetensors: an 8-byte header length, then a JSON header (no pickle opcodes).
    raw = (CHECKPOINT_DIR / "rnnsearch-dates.safetensors").read_bytes()
    header = int.from_bytes(raw[:8], "little")
    assert json.loads(raw[8 : 8 + header])


def test_save_then_load_round_trips(tmp_path):
    model = attnlab.load("rnnsearch-dates")
    checkpoints.save(model, "copy", {**model.card, "name": "copy"}, directory=tmp_path)
    again = checkpoints.load("copy", directory=tmp_path)
    for (k, a), (k2, b) in zip(
        model.state_dict().items(), again.state_dict().items(), strict=False
    ):
        assert k == k2 and torch.equal(a, b)


def test_import_attnlab_is_light():
    code = "import sys, attnlab; assert 'torch' not in sys.modules; print(attnlab.load.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "load"
