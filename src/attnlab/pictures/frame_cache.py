"""Pictures rendered once and read back: the widgets' frames, shipped in ``results/frames.zip``.

A widget renders one picture per value of its controls (:mod:`attnlab.widgets._frames`):
tens of matplotlib drawings per widget, seconds of a student's Run-All.  The same inputs give
the same PNG bytes, so each picture is stored under a key of everything it depends on:

* the widget's name for it and the numbers, tokens and titles it draws (``inputs``: numpy
  arrays by dtype, shape and values, floats to :data:`DECIMALS` decimals),
* the source of the modules that draw it (``code``: the widget's own module, and every module
  of :mod:`attnlab.pictures`),
* the versions of matplotlib, Pillow and numpy (fonts and PNG encoding come with them).

:func:`rendered` returns the stored bytes when the key is in the archive, else draws them:
a changed model, date or drawing function is drawn afresh, never shown stale.  Nothing is
written at Run-All (the package may be read-only, and several kernels read the same file).

The archive is rebuilt by re-executing the deck with ``ATTNLAB_RECORD_FRAMES=1`` in the
environment (:data:`RECORD_ENV`): every picture the kernel looks up, read or drawn, is kept,
and the archive is replaced (:func:`attnlab.files.write_atomic`) with exactly those, so
pictures nothing uses any more are dropped.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import os
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
import PIL

from attnlab.files import write_atomic

__all__ = [
    "ARCHIVE",
    "DECIMALS",
    "RECORD_ENV",
    "Counts",
    "counts",
    "picture_key",
    "rendered",
    "rendered_all",
]

ARCHIVE = Path(__file__).resolve().parents[1] / "results" / "frames.zip"
#: Set to 1 in the environment of the kernel that rebuilds :data:`ARCHIVE`.
RECORD_ENV = "ATTNLAB_RECORD_FRAMES"


@dataclass
class Counts:
    """How many pictures this process read from the archive, and how many it drew."""

    read: int = 0
    drawn: int = 0


counts = Counts()
#: Floats are keyed to this many decimals: no picture shows a finer difference, and the last
#: bits of float arithmetic differ between CPUs (a student's kernel must find the picture).
DECIMALS = 5
_recorded: dict[str, bytes] = {}  # key -> PNG, in the kernel that rebuilds the archive


def _feed(h, value) -> None:
    """Hash ``value`` with its type, so that 1, 1.0, "1" and [1] are four different keys."""
    if isinstance(value, dict):
        h.update(b"{")
        for k, v in value.items():
            _feed(h, k)
            _feed(h, v)
        h.update(b"}")
    elif isinstance(value, (list, tuple)):
        h.update(b"[" if isinstance(value, list) else b"(")
        for v in value:
            _feed(h, v)
        h.update(b"]")
    else:
        h.update(_scalar(value))


def _scalar(value) -> bytes:
    """The bytes that key one array, number, string or None."""
    if isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        if a.dtype.kind == "f":  # see DECIMALS; + 0.0 makes -0.0 the same key as 0.0
            a = np.round(a.astype(np.float64), DECIMALS) + 0.0
        return f"nd{a.dtype.str}{a.shape}".encode() + a.tobytes()
    if isinstance(value, (float, np.floating)):
        return f"float:{round(float(value), DECIMALS) + 0.0!r};".encode()
    if isinstance(value, (np.generic, bool, int, complex)):
        return f"{type(value).__name__}:{value!r};".encode()
    if value is None or isinstance(value, str):
        return f"{type(value).__name__}:{len(value or '')}:{value};".encode()
    if isinstance(value, bytes):
        return b"bytes%d:" % len(value) + value
    raise TypeError(f"frame_cache: cannot key a {type(value).__name__}")


@functools.cache
def _code_digest(modules: tuple[str, ...]) -> bytes:
    """The source of ``modules`` and of every module of attnlab.pictures, hashed."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    files = sorted(here.glob("*.py"))
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin:
            raise ValueError(f"frame_cache: no source for {name}")
        files.append(Path(spec.origin))
    for path in files:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    for library in (matplotlib, PIL, np):
        h.update(f"{library.__name__} {library.__version__};".encode())
    return h.digest()


def picture_key(name: str, inputs, code: Iterable[str] = ()) -> str:
    """The key of the picture ``name`` drawn from ``inputs`` by the modules ``code``."""
    h = hashlib.sha256(_code_digest(tuple(code)))
    _feed(h, name)
    _feed(h, inputs)
    return f"{name}-{h.hexdigest()[:32]}.png"


@functools.cache
def _archive() -> zipfile.ZipFile | None:
    try:
        return zipfile.ZipFile(ARCHIVE)
    except (OSError, zipfile.BadZipFile):
        return None  # no archive (or a broken one): every picture is drawn


def _stored(key: str) -> bytes | None:
    archive = _archive()
    if archive is None:
        return None
    try:
        return archive.read(key)
    except KeyError:
        return None


def rendered(name: str, inputs, draw: Callable[[], bytes], code: Iterable[str] = ()) -> bytes:
    """The PNG of ``draw()``, read from the archive when it holds the same picture.

    ``name`` says what the picture is ("ScoreLab"), ``inputs`` everything it is drawn from
    (see :func:`picture_key`), ``code`` the modules besides attnlab.pictures that draw it.
    """
    key = picture_key(name, inputs, code)
    png = _stored(key)
    if png is None:
        png = draw()
        counts.drawn += 1
    else:
        counts.read += 1
    if os.environ.get(RECORD_ENV) == "1":
        _record(key, png)
    return png


def rendered_all(
    name: str, inputs: list, draw: Callable[[], list[bytes]], code: Iterable[str] = ()
) -> list[bytes]:
    """The PNGs of ``draw()`` (one per item of ``inputs``, drawn together), read from the
    archive when it holds every one of them."""
    keys = [picture_key(name, item, code) for item in inputs]
    stored = [_stored(key) for key in keys]
    if any(png is None for png in stored):
        stored = list(draw())
        if len(stored) != len(keys):
            raise ValueError("frame_cache: draw() made another number of pictures")
        counts.drawn += len(keys)
    else:
        counts.read += len(keys)
    if os.environ.get(RECORD_ENV) == "1":
        for key, png in zip(keys, stored, strict=True):
            _record(key, png)
    return stored


def _record(key: str, png: bytes) -> None:
    """Keep ``key`` and replace the archive with every picture this process looked up.

    The archive this process opened stays open: the pictures it has not looked up yet are
    still read from it (the replaced file lives on while it is open)."""
    if _recorded.get(key) == png:
        return
    _recorded[key] = png
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as new:
        for k in sorted(_recorded):
            info = zipfile.ZipInfo(k, date_time=(1980, 1, 1, 0, 0, 0))  # same bytes, same file
            new.writestr(info, _recorded[k])
    write_atomic(ARCHIVE, out.getvalue())
