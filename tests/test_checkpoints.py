"""Shipped checkpoints: every one loads fast and small, is accurate, and is never unpickled."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
import torch

import attnlab
from attnlab.models import catalogue
from attnlab.text.tasks import dates
from attnlab.training import checkpoints
from attnlab.training.checkpoints import CHECKPOINT_DIR, CheckpointError
from attnlab.training.config import TEST_SEED_OFFSET
from attnlab.training.evaluate import evaluate

CARD_FIELDS = {
    "kind", "task", "config", "src_vocab", "tgt_vocab", "seed", "steps", "train_seconds",
    "heldout_accuracy", "torch_version", "weights_sha256", "weights_file", "checksum", "format",
}  # fmt: skip
SHIPPED = catalogue.names()


@contextlib.contextmanager
def only_meta_models():
    """Inside: building a model other than on the meta device (shapes only) fails the test.

    A crafted or damaged checkpoint must be refused before a real model takes memory and
    time (speed itself is printed by benchmarks/training.py, not timed here).
    """
    real = checkpoints.build_model

    def build(*args, **kwargs):
        if torch.get_default_device().type != "meta":
            pytest.fail("a real model was built for a checkpoint that is refused")
        return real(*args, **kwargs)

    with mock.patch.object(checkpoints, "build_model", build):
        yield


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_model_loads_small_and_fast(name):
    weights = checkpoints.weights_path(name)
    assert weights.parent == CHECKPOINT_DIR and weights.name.startswith(f"{name}.")
    words = checkpoints.load_card(name).get("tokens") == "subword"  # the four: 25 MB in all
    assert weights.stat().st_size <= (10_000_000 if words else 1_000_000)
    assert (CHECKPOINT_DIR / f"{name}.json").stat().st_size <= 1_000_000
    model = attnlab.load(name)  # the 0.3 s target is printed by benchmarks/training.py
    shipped = catalogue.entry(name)
    assert (model.kind, model.card["task"]) == (shipped.kind, shipped.task)  # as catalogued
    assert CARD_FIELDS <= set(model.card)
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


def test_the_catalogue_lists_every_card_of_the_checkpoint_folder_once():
    cards = sorted(p.stem for p in CHECKPOINT_DIR.glob("*.json"))
    assert sorted(SHIPPED) == cards and len(set(SHIPPED)) == len(SHIPPED)
    assert checkpoints.available() == cards


def test_the_catalogue_answers_by_field_and_refuses_a_misspelt_one():
    assert catalogue.names(task="dates", kind="transformer") == ("transformer-dates",)
    assert catalogue.names(score="dot") == ("rnnsearch-dates-dot",)
    assert catalogue.lecture_model("rnnsearch") == "rnnsearch-dates"  # before the score models
    assert catalogue.lecture_model("rnnencdec", "reverse") == "rnnenc-reverse"
    assert set(catalogue.names(offered=False)) == set(catalogue.names(task="reverse"))
    with pytest.raises(TypeError, match="no field 'kinds'"):
        catalogue.names(kinds="rnnsearch")
    with pytest.raises(ValueError, match="no shipped model 'rnnsearch-klingon'"):
        catalogue.entry("rnnsearch-klingon")


def test_attnlab_load_is_the_checkpoint_loader():
    assert attnlab.load is checkpoints.load  # one function: attnlab.load?? shows what runs


def test_unknown_name_lists_the_names():
    with pytest.raises(ValueError) as err:
        attnlab.load("rnnsearch-klingon")
    for name in SHIPPED:
        assert name in str(err.value)


def copy_of(name: str, folder) -> None:
    shutil.copy(CHECKPOINT_DIR / f"{name}.json", folder)
    shutil.copy(checkpoints.weights_path(name), folder)


@pytest.fixture
def copy_dir(tmp_path):
    copy_of("rnnenc-dates", tmp_path)
    return tmp_path


def card_of(folder) -> dict:
    return json.loads((folder / "rnnenc-dates.json").read_text())


def write_card(folder, card: dict, sign: bool = True) -> None:
    """Write a (crafted) card, signed as save() would so that only the crafting is tested."""
    if sign:
        card = {**card, "checksum": checkpoints.checksum(card)}
    (folder / "rnnenc-dates.json").write_text(json.dumps(card))


def test_a_copied_checkpoint_loads_by_path_and_by_folder(copy_dir):
    weights = copy_dir / card_of(copy_dir)["weights_file"]
    a = checkpoints.load(weights)
    b = checkpoints.load("rnnenc-dates", directory=copy_dir)
    c = checkpoints.load(copy_dir / "rnnenc-dates.json")
    assert a.translate("3 May 1979") == b.translate("3 May 1979") == c.translate("3 May 1979")


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
    path = copy_dir / card_of(copy_dir)["weights_file"]
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(CheckpointError, match=re.escape(path.name)):
        checkpoints.load("rnnenc-dates", directory=copy_dir)


def test_a_card_without_a_checksum_is_refused(copy_dir):
    card = card_of(copy_dir)
    del card["checksum"]
    write_card(copy_dir, card, sign=False)
    with pytest.raises(CheckpointError, match="rnnenc-dates.json.*no checksum"):
        checkpoints.load("rnnenc-dates", directory=copy_dir)


def test_the_checksum_covers_the_card(copy_dir):
    """Swapping two characters of a vocabulary used to load silently and translate wrongly."""
    card = card_of(copy_dir)
    vocab = card["tgt_vocab"]
    vocab[0], vocab[1] = vocab[1], vocab[0]
    write_card(copy_dir, card, sign=False)
    with pytest.raises(CheckpointError, match="rnnenc-dates.json.*checksum does not match"):
        checkpoints.load("rnnenc-dates", directory=copy_dir)


def test_the_checksum_binds_the_card_to_its_weights(copy_dir):
    """Another model's weights under this card's file name are refused."""
    card = card_of(copy_dir)
    other = checkpoints.weights_path("transformer-dates")
    shutil.copy(other, copy_dir / card["weights_file"])
    with pytest.raises(CheckpointError, match="SHA-256 does not match"):
        checkpoints.load("rnnenc-dates", directory=copy_dir)


def test_a_corrupted_card_is_refused_naming_it(copy_dir):
    card = copy_dir / "rnnenc-dates.json"
    card.write_text("{ not json")
    with pytest.raises(CheckpointError, match="rnnenc-dates.json"):
        checkpoints.load("rnnenc-dates", directory=copy_dir)
    card.write_text(json.dumps({"kind": "rnnsearch", "config": {"no_such_field": 1}}))
    with pytest.raises(CheckpointError, match="rnnenc-dates.json"):
        checkpoints.load("rnnenc-dates", directory=copy_dir)


CRAFTED = {
    "negative size": {"config": {"emb": -3}},
    "zero size": {"config": {"dec_hidden": 0}},
    "huge size": {"config": {"enc_hidden": 10**9}},
    "size as text": {"config": {"emb": "32"}},
    "size as float": {"config": {"emb": 32.0}},
    "size as bool": {"config": {"emb": True}},
    "huge max length": {"config": {"max_tgt_len": 10**6}},
    "unknown field": {"config": {"num_layers": 1_000_000}},
    "config not an object": {"config": [1, 2]},
    "unknown kind": {"kind": "lstm"},
    "kind not text": {"kind": ["rnnsearch"]},
    "score not a score": {"config": {"score": "cosine"}},
    "repeated vocabulary character": {"src_vocab": ["a", "a", "b"]},
    "vocabulary of words": {"tgt_vocab": ["ab", "c"]},
    "vocabulary not a list": {"tgt_vocab": "0123456789-"},
    "empty vocabulary": {"tgt_vocab": []},
    "huge vocabulary": {"tgt_vocab": [chr(0x4E00 + i) for i in range(5000)]},
    "weights outside the folder": {"weights_file": "../../etc/passwd"},
    "accuracy not a number": {"heldout_accuracy": "99%"},
    "steps negative": {"steps": -1},
    "dropout not a probability": {"config": {"dropout": 1.5}},
    "dropout negative": {"config": {"dropout": -0.1}},
    "a subword model on a character card": {"subword_model": "QUJD"},
}


def _subword_card(tmp_path, change) -> None:
    copy_of("transformer-en-fr", tmp_path)
    path = tmp_path / "transformer-en-fr.json"
    card = json.loads(path.read_text())
    card.update(change(card))
    path.write_text(json.dumps({**card, "checksum": checkpoints.checksum(card)}))


SUBWORD_CRAFTED = {
    "not base64": lambda card: {"subword_model": "not base64 at all!"},
    "not a model": lambda card: {"subword_model": base64.b64encode(b"x" * 300).decode()},
    "huge": lambda card: {"subword_model": "QUJD" * 200_000},
    "missing": lambda card: {"subword_model": None},
    "pieces not the model's": lambda card: {
        "src_vocab": card["src_vocab"][::-1],
        "tgt_vocab": card["tgt_vocab"][::-1],
    },
}


@pytest.mark.parametrize("change", SUBWORD_CRAFTED.values(), ids=SUBWORD_CRAFTED.keys())
def test_a_crafted_subword_card_is_refused_naming_it(tmp_path, change):
    """A subword card carries its SentencePiece model (base64, size-capped); a damaged or
    mismatched one is one line naming the card, before any tensor is built."""
    _subword_card(tmp_path, change)
    with only_meta_models(), pytest.raises(CheckpointError, match="transformer-en-fr"):
        checkpoints.load("transformer-en-fr", directory=tmp_path)


@pytest.mark.parametrize("change", CRAFTED.values(), ids=CRAFTED.keys())
def test_a_crafted_card_is_refused_fast_naming_it(copy_dir, change):
    card = card_of(copy_dir)
    for key, value in change.items():
        card[key] = {**card[key], **value} if key == "config" and isinstance(value, dict) else value
    write_card(copy_dir, card)
    with only_meta_models(), pytest.raises(CheckpointError, match="rnnenc-dates"):
        checkpoints.load("rnnenc-dates", directory=copy_dir)


def test_a_transformer_card_with_a_million_layers_or_odd_heads_is_refused(tmp_path):
    copy_of("transformer-dates", tmp_path)
    path = tmp_path / "transformer-dates.json"
    for change in ({"num_layers": 1_000_000}, {"num_heads": 3}, {"d_model": 4096, "d_ff": 4096}):
        card = json.loads(path.read_text())
        card["config"].update(change)
        path.write_text(json.dumps({**card, "checksum": checkpoints.checksum(card)}))
        with only_meta_models(), pytest.raises(CheckpointError, match="transformer-dates"):
            checkpoints.load("transformer-dates", directory=tmp_path)


def test_deeply_nested_or_huge_cards_are_refused_fast(copy_dir):
    path = copy_dir / "rnnenc-dates.json"
    for text, why in [
        ("[" * 200_000 + "]" * 200_000, "nested too deeply"),
        ('{"a": "' + "x" * 2_000_000 + '"}', "larger than"),
        ('{"a": NaN}', "not a JSON number"),
        ("\xff\xfe", ""),
    ]:
        path.write_bytes(text.encode("latin-1"))
        with only_meta_models(), pytest.raises(CheckpointError, match=f"rnnenc-dates.json.*{why}"):
            checkpoints.load("rnnenc-dates", directory=copy_dir)


@pytest.mark.parametrize("missing", ["weights", ".json"])
def test_a_missing_file_is_named(copy_dir, missing):
    weights = copy_dir / card_of(copy_dir)["weights_file"]
    (weights if missing == "weights" else copy_dir / "rnnenc-dates.json").unlink()
    name = weights.name if missing == "weights" else "rnnenc-dates.json"
    with pytest.raises(FileNotFoundError, match=re.escape(name)):
        checkpoints.load("rnnenc-dates", directory=copy_dir)


# --------------------------------------------------------------------------- saving
def states_equal(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.fixture
def old_and_new(copy_dir):
    """The checkpoint in copy_dir (old) and a different model to save over it (new)."""
    old = checkpoints.load("rnnenc-dates", directory=copy_dir)
    new = checkpoints.load("rnnenc-dates", directory=copy_dir)
    with torch.no_grad():
        next(new.parameters()).add_(1.0)
    return old, new


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_reader_sees_the_old_pair_or_the_new_pair_never_a_mix(copy_dir, old_and_new, monkeypatch):
    old, new = old_and_new
    seen = []
    write = checkpoints.write_atomic

    def write_and_read(path, data):  # load between every two steps of the save
        seen.append(checkpoints.load("rnnenc-dates", directory=copy_dir))
        write(path, data)
        seen.append(checkpoints.load("rnnenc-dates", directory=copy_dir))

    monkeypatch.setattr(checkpoints, "write_atomic", write_and_read)
    checkpoints.save(new, "rnnenc-dates", old.card, directory=copy_dir)
    assert len(seen) == 4
    assert all(states_equal(m, old) for m in seen[:3]) and states_equal(seen[3], new)
    after = checkpoints.load("rnnenc-dates", directory=copy_dir)
    assert states_equal(after, new)
    assert len(list(copy_dir.glob("*.safetensors"))) == 1  # the old weights are gone


def test_a_load_that_races_a_save_reads_the_card_again(copy_dir, old_and_new, monkeypatch):
    old, new = old_and_new
    read = checkpoints._read_weights
    calls = []

    def save_in_between(path):  # the card was read; now a save replaces the pair
        if not calls:
            checkpoints.save(new, "rnnenc-dates", old.card, directory=copy_dir)
        calls.append(path)
        return read(path)

    monkeypatch.setattr(checkpoints, "_read_weights", save_in_between)
    got = checkpoints.load("rnnenc-dates", directory=copy_dir)
    assert len(calls) == 2 and states_equal(got, new)


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
@pytest.mark.parametrize("failing", ["weights", "card"])
def test_a_failed_or_interrupted_save_leaves_the_old_pair_and_no_temporary_file(
    copy_dir, old_and_new, monkeypatch, error, failing
):
    old, new = old_and_new
    before = sorted(p.name for p in copy_dir.iterdir())
    fsync = os.fsync
    calls = []

    def fail_midway(fd):  # the temporary file is half written when this happens
        calls.append(fd)
        if (failing == "weights") == (len(calls) == 1):
            raise error
        fsync(fd)

    monkeypatch.setattr(os, "fsync", fail_midway)
    with pytest.raises(type(error)):
        checkpoints.save(new, "rnnenc-dates", old.card, directory=copy_dir)
    assert sorted(p.name for p in copy_dir.iterdir()) == before
    assert leftovers(copy_dir) == []
    assert states_equal(checkpoints.load("rnnenc-dates", directory=copy_dir), old)


def test_save_refuses_a_bad_name(tmp_path):
    model = attnlab.load("rnnenc-dates")
    for name in ("../escape", "a/b", "", "x" * 200, "a.b"):
        with pytest.raises(ValueError, match="checkpoint name"):
            checkpoints.save(model, name, model.card, directory=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_save_refuses_a_card_that_load_would_refuse(tmp_path):
    """save checks the card by the rules load reads it by, before writing a byte."""
    model = attnlab.load("rnnenc-dates")
    for change in ({"heldout_accuracy": 1.5}, {"src_vocab": ["a", "a"]}, {"steps": -1}):
        with pytest.raises(CheckpointError, match="copy.json refused"):
            checkpoints.save(model, "copy", {**model.card, **change}, directory=tmp_path)
    assert list(tmp_path.iterdir()) == []


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
    raw = checkpoints.weights_path("rnnsearch-dates").read_bytes()
    header = int.from_bytes(raw[:8], "little")
    assert json.loads(raw[8 : 8 + header])


def test_save_then_load_round_trips(tmp_path):
    model = attnlab.load("rnnsearch-dates")
    checkpoints.save(model, "copy", {**model.card, "name": "copy"}, directory=tmp_path)
    again = checkpoints.load("copy", directory=tmp_path)
    assert states_equal(model, again)
    assert again.card["checksum"] == checkpoints.checksum(again.card)
    assert leftovers(tmp_path) == []


def test_import_attnlab_is_light():
    code = "import sys, attnlab; assert 'torch' not in sys.modules; print(attnlab.load.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "load"


def test_huge_weights_are_refused_before_being_read_whole(copy_dir):
    path = copy_dir / card_of(copy_dir)["weights_file"]
    with path.open("r+b") as f:
        f.truncate(checkpoints.MAX_WEIGHTS_BYTES + 1000)  # sparse: no disk, no time
    read = []
    real_open = Path.open

    def counting_open(self, *args, **kwargs):  # how much of the weights file is read
        f = real_open(self, *args, **kwargs)
        if self == path:
            real_read = f.read
            f.read = lambda n=-1: read.append(n) or real_read(n)
        return f

    with mock.patch.object(Path, "open", counting_open), only_meta_models():
        with pytest.raises(CheckpointError, match=re.escape(path.name) + ".*larger than"):
            checkpoints.load("rnnenc-dates", directory=copy_dir)
    assert read == [checkpoints.MAX_WEIGHTS_BYTES + 1]  # never the whole file


# --------------------------------------------------------------------------- crafted headers
def crafted_checkpoint(folder, hidden: int, data_bytes: int = 25_000) -> None:
    """An rnnenc-dates card for a model of ``hidden`` units, signed, and a weights file of
    ``data_bytes`` whose header claims that model's tensors (shapes right, bytes missing)."""
    from attnlab.models.registry import build_model
    from attnlab.text.vocab import Vocab

    card = json.loads((CHECKPOINT_DIR / "rnnenc-dates.json").read_text())
    sizes = dict.fromkeys(("emb", "enc_hidden", "dec_hidden", "attn_hidden"), hidden)
    card["config"] = {**card["config"], **sizes}
    with torch.device("meta"):
        meta = build_model(
            card["kind"], Vocab(card["src_vocab"]), Vocab(card["tgt_vocab"]), card["config"]
        )
    header, offset = {}, 0
    for key, tensor in meta.state_dict().items():
        end = offset + tensor.numel() * 4
        header[key] = {"dtype": "F32", "shape": list(tensor.shape), "data_offsets": [offset, end]}
        offset = end
    raw = json.dumps(header).encode()
    data = len(raw).to_bytes(8, "little") + raw + b"\0" * data_bytes
    digest = hashlib.sha256(data).hexdigest()
    card["weights_file"] = f"rnnenc-dates.{digest[:16]}.safetensors"
    card["weights_sha256"] = digest
    (folder / card["weights_file"]).write_bytes(data)
    write_card(folder, {k: v for k, v in card.items() if k != "checksum"})


def test_a_header_claiming_more_bytes_than_the_file_holds_is_refused_before_building(tmp_path):
    crafted_checkpoint(tmp_path, hidden=512)  # a 17 MB model in a 25 kB file
    with only_meta_models(), pytest.raises(CheckpointError, match="outside the file") as info:
        checkpoints.load("rnnenc-dates", directory=tmp_path)
    assert "\n" not in str(info.value) and "rnnenc-dates" in str(info.value)


def test_a_crafted_large_model_is_refused_in_bounded_memory_and_time(tmp_path):
    """A 25 kB file whose header and card claim a 1 GB model: refused in well under a second
    and without the model's memory (measured in a fresh process: its peak resident size)."""
    crafted_checkpoint(tmp_path, hidden=4096)
    code = f"""
import resource, time
from attnlab.training import checkpoints
checkpoints.load("rnnenc-dates")  # imports paid (and the shipped loader warmed) first
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
try:
    checkpoints.load("rnnenc-dates", directory={str(tmp_path)!r})
except checkpoints.CheckpointError as err:
    print("refused:", err)
seconds = time.perf_counter() - start
grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(f"{{seconds:.2f}} {{grown_mb:.0f}}")
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    refused, measured = out.stdout.strip().splitlines()
    assert refused.startswith("refused:") and "rnnenc-dates" in refused
    seconds, grown_mb = map(float, measured.split())
    assert seconds < 2.0, seconds
    assert grown_mb < 200, f"the refusal took {grown_mb:.0f} MB"


def test_a_card_for_a_model_over_the_memory_cap_is_refused(tmp_path):
    """Even a file that held every byte: a model over MAX_MODEL_BYTES is never built."""
    crafted_checkpoint(tmp_path, hidden=2048, data_bytes=0)  # 270 MB claimed
    with only_meta_models(), pytest.raises(CheckpointError) as info:
        checkpoints.load("rnnenc-dates", directory=tmp_path)
    assert "\n" not in str(info.value)
