"""Files: the package's own folders, and files written whole or not at all (:func:`write_atomic`).

Everything the package writes (checkpoints, results, notebooks, reports) goes through it, so a
reader never sees half a file and a failure leaves the old file as it was.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["CHECKPOINT_DIR", "RESULTS_DIR", "write_atomic"]

# What the installed package owns: the shipped checkpoints and the cached results.
CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"
RESULTS_DIR = Path(__file__).resolve().parent / "results"


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
