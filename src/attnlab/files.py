"""Files: the package's own folders, the user's, and files written whole or not at all.

Everything the package writes (checkpoints, results, notebooks, reports) goes through
:func:`write_atomic`, so a reader never sees half a file and a failure leaves the old file as
it was; :func:`check_writable` proves a folder can take the files before the work that makes
them starts.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

__all__ = [
    "CHECKPOINT_DIR",
    "RESULTS_DIR",
    "FolderError",
    "check_file_target",
    "check_writable",
    "user_checkpoint_dir",
    "write_atomic",
]

# What the installed package owns: the shipped checkpoints and the cached results.
CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"
RESULTS_DIR = Path(__file__).resolve().parent / "results"


class FolderError(Exception):
    """A folder cannot take the files meant for it (the message is one line)."""


def user_checkpoint_dir() -> Path:
    """Where the user's own checkpoints go: ``$XDG_DATA_HOME/attnlab/checkpoints``
    (``~/.local/share/attnlab/checkpoints`` when XDG_DATA_HOME is unset)."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "attnlab" / "checkpoints"


def check_writable(folder: Path, names: list[str]) -> None:
    """Make ``folder`` if needed and prove it can take the checkpoints ``names`` (NAME.json
    and its weights), else :class:`FolderError`."""
    if folder.exists() and not folder.is_dir():
        raise FolderError(f"{folder} is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".attnlab-probe-"):
            pass
    except OSError as err:
        raise FolderError(f"cannot write to {folder}: {err.strerror or err}") from None
    for name in names:
        card = folder / f"{name}.json"
        if card.exists() and not card.is_file():
            raise FolderError(f"{card} is in the way (not a file)")


def check_file_target(path: Path, replace: bool = False) -> None:
    """Prove that :func:`write_atomic` can write the file ``path`` before the work that makes
    it starts, else :class:`FolderError` (one line): the folder it goes in exists and takes
    files, ``path`` is not a folder, not a link that goes nowhere or round in a loop, and,
    unless ``replace``, not a file that is there already (the user's: replaced only when
    asked)."""
    try:
        info = path.lstat()
    except (FileNotFoundError, NotADirectoryError):  # nothing there: its folder is checked below
        info = None
    except OSError as err:
        raise FolderError(f"cannot write {path}: {err.strerror or err}") from None
    if info is not None:
        try:
            path.stat()
        except OSError as err:  # a dangling link or a loop of links
            raise FolderError(
                f"{path} is a link that cannot be followed: {err.strerror or err}"
            ) from None
        if path.is_dir():
            raise FolderError(f"{path} is a folder: give the path of a file")
        if not replace:
            raise FolderError(f"{path} exists: add --force to replace it")
    parent = path.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise FolderError(f"cannot write {path}: its folder {parent} {what}")
    try:
        with tempfile.NamedTemporaryFile(dir=parent, prefix=".attnlab-probe-"):
            pass
    except OSError as err:
        raise FolderError(f"cannot write to {parent}: {err.strerror or err}") from None


def write_atomic(path: Path | str, data: bytes | str) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it onto ``path``.

    A reader sees the old file or the new one; on any failure (Ctrl+C included) the temporary
    file is removed and ``path`` is untouched.  Text is written as UTF-8.
    """
    path = Path(path)
    data = data.encode() if isinstance(data, str) else data
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        tmp.chmod(0o644)  # readable by everyone, like the rest of the package
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
