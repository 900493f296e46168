"""Files that hold up: training deletes only its own weights, a save interrupted anywhere
leaves a loadable checkpoint, and the data card never replaces a user's file unasked.

Each case sets up the folder a careless user (or a foreign tool) leaves behind and checks
what is on disk afterwards, by content: what was the user's is still there, byte for byte,
and what the package wrote loads.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch
from conftest import attnlab_command

from attnlab import __main__ as command_line
from attnlab import files
from attnlab.text import corpus, seen
from attnlab.training import checkpoints
from attnlab.training.checkpoints import CHECKPOINT_DIR, CheckpointError

#: A training run of the command line that takes about a second (tests/test_train.py's).
QUICK = ["--max-steps", "2", "--n-train", "64", "--n-valid", "8", "--n-test", "8"]
QUICK += ["--batch-size", "8"]
USERS = b"the user's own file, not a checkpoint"


def folder_state(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def copy_shipped(name: str, folder: Path) -> None:
    shutil.copy(CHECKPOINT_DIR / f"{name}.json", folder)
    shutil.copy(checkpoints.weights_path(name), folder)


def signed(card: dict) -> dict:
    body = {k: v for k, v in card.items() if k != "checksum"}
    return {**body, "checksum": checkpoints.checksum(body)}


def states_equal(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


# --------------------------------------------------------------------------- training deletes
def test_training_deletes_no_file_that_a_foreign_card_names(tmp_path):
    """A NAME.json that attnlab did not write names a user's file: training refuses, in one
    line and before any work, and both files stay as they were."""
    (tmp_path / "mine.safetensors").write_bytes(USERS)
    (tmp_path / "rnnsearch-dates.json").write_text(json.dumps({"weights_file": "mine.safetensors"}))
    before = folder_state(tmp_path)
    run = attnlab_command("train", "--model", "rnnsearch", *QUICK, "--out", str(tmp_path))
    assert run.returncode == 2 and "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "rnnsearch-dates.json is not an attnlab checkpoint card" in lines[0]
    assert folder_state(tmp_path) == before


def test_save_deletes_no_file_that_a_signed_but_foreign_card_names(tmp_path):
    """Anyone can sign a card: one whose weights file is not NAME.<its digest>.safetensors
    is not ours, and save refuses to replace it rather than delete what it names."""
    copy_shipped("rnnenc-dates", tmp_path)
    model = checkpoints.load("rnnenc-dates", directory=tmp_path)
    card_path = tmp_path / "rnnenc-dates.json"
    users = tmp_path / "notes.0123456789abcdef.safetensors"
    users.write_bytes(USERS)
    (tmp_path / model.card["weights_file"]).unlink()
    card_path.write_text(json.dumps(signed({**model.card, "weights_file": users.name})))
    before = folder_state(tmp_path)
    with pytest.raises(CheckpointError, match="is not an attnlab checkpoint card"):
        checkpoints.save(model, "rnnenc-dates", model.card, directory=tmp_path)
    assert folder_state(tmp_path) == before


def test_save_deletes_old_weights_only_when_their_sha256_is_the_cards(tmp_path):
    """Our own card, but the file it names now holds other bytes (the user's): kept."""
    copy_shipped("rnnenc-dates", tmp_path)
    model = checkpoints.load("rnnenc-dates", directory=tmp_path)
    named = tmp_path / model.card["weights_file"]
    named.write_bytes(USERS)  # the name the card gives, but not the bytes it signed
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    new = checkpoints.save(model, "rnnenc-dates", model.card, directory=tmp_path)
    assert named.read_bytes() == USERS
    assert states_equal(checkpoints.load("rnnenc-dates", directory=tmp_path), model)
    assert new.name != named.name


def test_save_still_replaces_its_own_verified_checkpoint(tmp_path):
    copy_shipped("rnnenc-dates", tmp_path)
    model = checkpoints.load("rnnenc-dates", directory=tmp_path)
    old = tmp_path / model.card["weights_file"]
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    new = checkpoints.save(model, "rnnenc-dates", model.card, directory=tmp_path)
    assert not old.exists() and sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["rnnenc-dates.json", new.name]
    )


# --------------------------------------------------------------------------- interrupted saves
class Interrupt:
    """Raise KeyboardInterrupt at the k-th call of a function (before or after the real
    call ran: an interrupt that lands just after a rename or a delete took effect)."""

    def __init__(self, real, k: int, after: bool):
        self.real, self.k, self.after, self.calls = real, k, after, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.k and not self.after:
            raise KeyboardInterrupt
        out = self.real(*args, **kwargs)
        if self.calls == self.k:
            raise KeyboardInterrupt
        return out


#: Where an interrupt can land: the renames, the atomic writes, the delete of the old weights.
STEPS = [
    (target, k, after)
    for target, calls in (("os.replace", 2), ("write_atomic", 2), ("unlink", 1))
    for k in range(1, calls + 1)
    for after in (False, True)
]


@pytest.mark.parametrize(("target", "k", "after"), STEPS, ids=[f"{t}-{k}-{a}" for t, k, a in STEPS])
def test_an_interrupt_at_any_step_of_a_save_leaves_a_loadable_checkpoint(
    tmp_path, monkeypatch, target, k, after
):
    copy_shipped("rnnenc-dates", tmp_path)
    old = checkpoints.load("rnnenc-dates", directory=tmp_path)
    new = checkpoints.load("rnnenc-dates", directory=tmp_path)
    with torch.no_grad():
        next(new.parameters()).add_(1.0)
    if target == "os.replace":
        interrupt = Interrupt(os.replace, k, after)
        monkeypatch.setattr(os, "replace", interrupt)
    elif target == "write_atomic":
        interrupt = Interrupt(checkpoints.write_atomic, k, after)
        monkeypatch.setattr(checkpoints, "write_atomic", interrupt)
    else:
        interrupt = Interrupt(Path.unlink, k, after)
        monkeypatch.setattr(
            Path, "unlink", lambda self, missing_ok=False: interrupt(self, missing_ok)
        )
    with pytest.raises(KeyboardInterrupt):
        checkpoints.save(new, "rnnenc-dates", old.card, directory=tmp_path)
    assert interrupt.calls >= k  # the interrupt did land
    monkeypatch.undo()
    loaded = checkpoints.load("rnnenc-dates", directory=tmp_path)
    assert states_equal(loaded, old) or states_equal(loaded, new)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# --------------------------------------------------------------------------- the data card
@pytest.fixture
def no_build(monkeypatch):
    """The corpus build fails the test: a path refused must be refused before the build."""
    monkeypatch.setattr(corpus, "build", lambda *a, **k: pytest.fail("built before checking"))


def one_error_line(run) -> str:
    assert "Traceback" not in run.stderr, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    return lines[0]


def test_the_data_card_never_replaces_an_existing_file_without_force(tmp_path, no_build):
    card = tmp_path / "notes.md"
    card.write_bytes(USERS)
    run = attnlab_command("corpus", "--card", str(card))
    assert run.returncode == 2
    assert "--force" in one_error_line(run) and str(card) in run.stderr
    assert card.read_bytes() == USERS


def test_force_replaces_the_data_card(tmp_path, monkeypatch):
    built = corpus.Built("fr", {s: [("Close", "Fermer")] for s in corpus.SPLITS}, {}, 3)
    monkeypatch.setattr(corpus, "build", lambda lang, folder: built)
    monkeypatch.setattr(command_line, "data_card", lambda *args: "# the new card\n")
    monkeypatch.setattr(seen, "SEEN_DIR", tmp_path)  # --force: not the shipped training strings
    card = tmp_path / "card.md"
    card.write_bytes(USERS)
    run = attnlab_command("corpus", "--card", str(card), "--force")
    assert run.returncode == 0, run.stderr
    assert card.read_text() == "# the new card\n"


def loop(tmp_path: Path) -> Path:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    return tmp_path / "a"


PATHS = {
    "a folder": (lambda tmp: tmp, "is a folder"),
    "a missing folder": (lambda tmp: tmp / "missing" / "card.md", "does not exist"),
    "a file as its folder": (lambda tmp: tmp / "file.txt" / "card.md", "is not a folder"),
    "a loop of links": (loop, "link"),
    "a dangling link": (
        lambda tmp: (tmp / "dangling").symlink_to(tmp / "nowhere") or tmp / "dangling",
        "link",
    ),
}


@pytest.mark.parametrize(("make", "words"), PATHS.values(), ids=PATHS.keys())
def test_every_bad_card_path_is_one_line_before_the_build(tmp_path, no_build, make, words):
    (tmp_path / "file.txt").write_bytes(USERS)
    path = make(tmp_path)
    for force in ([], ["--force"]):
        run = attnlab_command("corpus", "--card", str(path), *force)
        assert run.returncode == 2
        assert words in one_error_line(run)
    assert (tmp_path / "file.txt").read_bytes() == USERS


def test_a_read_only_folder_is_one_line_before_the_build(tmp_path, no_build, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    if os.access(locked, os.W_OK):  # root writes anywhere: refuse the write as a mount would

        def refused(**kwargs):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(tempfile, "NamedTemporaryFile", refused)
    run = attnlab_command("corpus", "--card", str(locked / "card.md"))
    assert run.returncode == 2 and "cannot write" in one_error_line(run)
    locked.chmod(0o755)


def test_check_file_target_takes_a_new_file_in_a_folder_that_exists(tmp_path):
    files.check_file_target(tmp_path / "new.md")
    files.check_file_target(tmp_path / "new.md", replace=True)
    assert list(tmp_path.iterdir()) == []  # the probe leaves nothing
