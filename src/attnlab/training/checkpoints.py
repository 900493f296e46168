"""Shipped models: safetensors weights + a signed JSON card, read without unpickling anything.

A checkpoint ``NAME`` in a folder (the package's is ``src/attnlab/checkpoints/``) is two files:

* ``NAME.json``: the card: kind, task, model config, vocabularies, seed, steps, training
  seconds, held-out accuracy, torch version, ``weights_file``, ``weights_sha256`` and
  ``checksum``;
* ``NAME.<first 16 hex digits of its SHA-256>.safetensors``: the state dict (plain tensors;
  safetensors cannot hold code), the file the card's ``weights_file`` names.

**Signed.** The card holds the weights' SHA-256 and is signed by its own ``checksum``
(:mod:`attnlab.training.cards`: the card's rules), so the checksum covers the card and the
weights together.  A card without a checksum, or whose checksum or weights do not match, is
refused.

**Never a mix.** The card is the manifest and is written last: :func:`save` writes the new
weights under their own, content-addressed name, then replaces the card in one atomic rename
(the moment the new pair takes effect), then deletes the weights the old card named.  A
reader sees the old card with the old weights or the new card with the new weights; if the
old weights vanish between its reading the card and opening them, :func:`load` reads the
card again once.  Every file is written to a temporary file in the same folder and renamed;
after any failure or Ctrl+C the temporary files are removed and the old pair is untouched.

**Bounded.** :func:`load` refuses a card that breaks a rule of :mod:`attnlab.training.cards`
or weights over 64 MB before parsing them, builds the model on torch's ``meta`` device first to
compare its shapes with the weights file's header, and only then allocates it.

``load(name)`` (also ``attnlab.load``) returns the model in eval mode, ``model.card`` set.  A
missing file raises :class:`FileNotFoundError`, a damaged or crafted one
:class:`CheckpointError`; both name the file.
"""

from __future__ import annotations

import hashlib
import json
import re
import stat
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch.overrides import TorchFunctionMode

from attnlab.files import CHECKPOINT_DIR, write_atomic
from attnlab.models import catalogue
from attnlab.models.registry import build_model
from attnlab.text.vocab import Vocab
from attnlab.training.cards import (
    FORMAT,
    MAX_CARD_BYTES,
    CheckpointError,
    card_error,
    check_card,
    checksum,
    read_card,
)

__all__ = [
    "CHECKPOINT_DIR",
    "CheckpointError",
    "available",
    "checksum",
    "load",
    "load_card",
    "read_card",
    "save",
    "weights_path",
]


MAX_WEIGHTS_BYTES = 64_000_000
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def _folder(directory: Path | str | None) -> Path:
    return Path(directory) if directory is not None else CHECKPOINT_DIR


def available(directory: Path | str | None = None) -> list[str]:
    """Names that :func:`load` accepts: the shipped ones (:mod:`attnlab.models.catalogue`)
    and any card in ``directory``."""
    folder = _folder(directory)
    found = {p.stem for p in folder.glob("*.json")} if folder.is_dir() else set()
    return sorted(set(catalogue.names()) | {n for n in found if NAME.fullmatch(n)})


# --------------------------------------------------------------------------- writing


def _previous_weights(folder: Path, name: str) -> Path | None:
    """The weights file that the card ``folder/name.json`` now there names, if it is a regular
    file right in ``folder`` (not a link, not elsewhere); else None.  Only that file is ours to
    delete: a user's ``name.finetuned-v2.safetensors`` beside it is not."""
    card = folder / f"{name}.json"
    try:
        if card.is_symlink() or not card.is_file() or card.stat().st_size > MAX_CARD_BYTES:
            return None
        named = json.loads(card.read_text(encoding="utf-8")).get("weights_file")
    except (OSError, ValueError, AttributeError):  # unreadable or damaged: delete nothing
        return None
    if not isinstance(named, str) or Path(named).name != named or named in ("", ".", ".."):
        return None
    path = folder / named
    try:
        info = path.lstat()
    except OSError:
        return None
    return path if stat.S_ISREG(info.st_mode) and named.endswith(".safetensors") else None


def save(model, name: str, card: dict, directory: Path | str | None = None) -> Path:
    """Write the checkpoint ``name`` (weights, then the signed card) into ``directory``
    (default: the package's folder); returns the weights path.  See the module docstring."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"a checkpoint name is letters, digits, '-' and '_'; got {name!r}")
    folder = _folder(directory)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    data = save_tensors(state, metadata={"name": name, "kind": model.kind})
    digest = hashlib.sha256(data).hexdigest()
    weights = folder / f"{name}.{digest[:16]}.safetensors"
    extra = {"name": name, "kind": model.kind, "format": FORMAT}
    extra.update(weights_file=weights.name, weights_sha256=digest)
    card = json.loads(json.dumps({**card, **extra}, allow_nan=False))  # as it will read back
    card["checksum"] = checksum(card)
    text = json.dumps(card, indent=1) + "\n"
    check_card(card, folder / f"{name}.json", len(text.encode()))  # never write what load refuses
    existed = weights.exists()
    previous = _previous_weights(folder, name)  # named by the card this save replaces
    try:
        write_atomic(weights, data)
        write_atomic(folder / f"{name}.json", text)  # the commit point: the new pair is in
    except BaseException:
        if not existed:
            weights.unlink(missing_ok=True)
        raise
    if previous is not None and previous.name != weights.name:
        previous.unlink(missing_ok=True)
    return weights


# --------------------------------------------------------------------------- loading
def _card_path(name: str | Path, directory: Path | str | None) -> Path:
    """The card's path for a name (shipped or in ``directory``) or a path to either file."""
    if not isinstance(name, (str, Path)):
        raise ValueError(f"a checkpoint is a name or a path; got {type(name).__name__}")
    if "\x00" in str(name):
        raise ValueError(f"a checkpoint name or path has no NUL character; got {str(name)[:40]!r}")
    p = Path(name)
    if isinstance(name, Path) or p.suffix in (".json", ".safetensors") or len(p.parts) > 1:
        return p.parent / f"{p.name.split('.')[0]}.json"
    names = available(directory)
    if name not in names:
        shown = name if len(name) <= 40 else name[:40] + "..."
        raise ValueError(f"unknown model {shown!r}; choose one of {', '.join(names)}")
    return _folder(directory) / f"{name}.json"


def weights_path(name: str | Path, directory: Path | str | None = None) -> Path:
    """The weights file of checkpoint ``name`` (as its card names it)."""
    card_path = _card_path(name, directory)
    return card_path.parent / read_card(card_path)["weights_file"]


def load_card(name: str | Path, directory: Path | str | None = None) -> dict:
    """The checked card of checkpoint ``name``, without building the model."""
    return read_card(_card_path(name, directory))


def _read_weights(path: Path) -> bytes:
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint weights not found: {path}")
    with path.open("rb") as f:
        data = f.read(MAX_WEIGHTS_BYTES + 1)
    if len(data) > MAX_WEIGHTS_BYTES:
        raise CheckpointError(f"corrupted checkpoint {path}: larger than {MAX_WEIGHTS_BYTES} bytes")
    return data


def _read_pair(card_path: Path) -> tuple[dict, Path, bytes]:
    """The card and its weights' bytes, reading the card again if a save replaced the pair."""
    card = read_card(card_path)
    path = card_path.parent / card["weights_file"]
    try:
        data = _read_weights(path)
    except FileNotFoundError:
        again = read_card(card_path)
        if again == card:
            raise
        card, path = again, card_path.parent / again["weights_file"]
        data = _read_weights(path)
    if hashlib.sha256(data).hexdigest() != card["weights_sha256"]:
        raise CheckpointError(f"corrupted checkpoint {path}: its SHA-256 does not match the card's")
    return card, path, data


def _header_shapes(data: bytes, path: Path) -> dict[str, list[int]]:
    """Tensor name -> shape from the safetensors header (8-byte length, then JSON)."""
    try:
        n = int.from_bytes(data[:8], "little")
        if not 0 < n <= min(len(data) - 8, MAX_CARD_BYTES):
            raise ValueError("bad header length")
        header = json.loads(data[8 : 8 + n])
        return {k: list(v["shape"]) for k, v in header.items() if k != "__metadata__"}
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as err:
        raise CheckpointError(f"corrupted checkpoint {path}: {err}") from None


class _NoDrawOnMeta(TorchFunctionMode):
    """``init.normal_`` of a meta tensor does nothing inside the block.

    nn.Embedding initialises with init.normal_, whose meta kernel imports torch._dynamo (5 s,
    measured): a meta tensor holds no values, so there is nothing to draw.  A function mode is
    torch's own way to intercept a call; no attribute of torch is replaced."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.init.normal_:
            tensor = args[0] if args else kwargs["tensor"]
            if tensor.is_meta:
                return tensor
        return func(*args, **kwargs)


def _build(card: dict, card_path: Path, shapes: dict[str, list[int]], weights: Path):
    """The model the card describes, once its shapes on the meta device match the weights'."""
    level = card.get("tokens", "char")
    src_vocab, tgt_vocab = Vocab(card["src_vocab"], level), Vocab(card["tgt_vocab"], level)
    args = (card["kind"], src_vocab, tgt_vocab, card["config"])
    try:
        with torch.device("meta"), _NoDrawOnMeta():
            meta = build_model(*args)  # shapes only: no memory
    except (ValueError, TypeError) as err:
        raise card_error(card_path, str(err).splitlines()[0]) from None
    expected = {k: list(v.shape) for k, v in meta.state_dict().items()}
    if expected != shapes:
        raise CheckpointError(
            f"corrupted checkpoint {weights}: its tensors do not match the card's model"
        )
    return build_model(*args)


def load(name: str | Path, directory: Path | str | None = None):
    """The shipped model ``name`` (e.g. "rnnsearch-dates"), one in ``directory``, or the
    checkpoint at a path (to either file).  Returns the model in eval mode, ``model.card`` set.
    """
    card_path = _card_path(name, directory)
    card, path, data = _read_pair(card_path)
    model = _build(card, card_path, _header_shapes(data, path), path)
    try:
        model.load_state_dict(load_tensors(data), strict=True)
    except (SafetensorError, RuntimeError, ValueError, OSError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CheckpointError(f"corrupted checkpoint {path}: {first}") from None
    model.eval()
    model.card = card
    model.unk_lexicon = dict(card.get("unk_lexicon", {}))  # what a written <unk> becomes
    return model
