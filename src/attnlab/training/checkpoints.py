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
(the moment the new pair takes effect), then deletes the weights the old card named, and
only when that card is one it wrote (signed, every field checked, the weights named
``NAME.<digest>``) and the file's SHA-256 is the card's: a foreign ``NAME.json`` is refused
(:func:`check_replaceable`), never replaced, and what it names is never deleted.  An
interrupt at any point leaves the old pair or the new one: the new weights are deleted only
while the card on disk does not name them.  A reader sees the old card with the old weights or the new card with the new weights; if the
old weights vanish between its reading the card and opening them, :func:`load` reads the
card again once.  Every file is written to a temporary file in the same folder and renamed;
after any failure or Ctrl+C the temporary files are removed and the old pair is untouched.

**Bounded.** :func:`load` refuses a card that breaks a rule of :mod:`attnlab.training.cards`
or weights over 64 MB before parsing them, checks that every tensor of the weights file's
header lies inside the file and holds exactly the bytes its shape needs (a header cannot
claim more than the file holds), builds the model on torch's ``meta`` device first to
compare its shapes with the header and refuse one over :data:`MAX_MODEL_BYTES`, and only
then allocates it.

``load(name)`` (also ``attnlab.load``) returns the model in eval mode, ``model.card`` set.  A
missing file raises :class:`FileNotFoundError`, a damaged or crafted one
:class:`CheckpointError`; both name the file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
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
    "check_replaceable",
    "checksum",
    "load",
    "load_card",
    "read_card",
    "save",
    "weights_path",
]


MAX_WEIGHTS_BYTES = 64_000_000
#: The most memory a loaded model may take (float32; the largest shipped one takes ~17 MB).
MAX_MODEL_BYTES = 64_000_000
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


def _sha256_of(path: Path) -> str | None:
    """The SHA-256 of the regular file ``path`` (not a link) of at most MAX_WEIGHTS_BYTES,
    read in chunks; None for anything else."""
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_WEIGHTS_BYTES:
            return None
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None


def _own_card(folder: Path, name: str) -> dict | None:
    """The card ``folder/name.json`` if it is one that :func:`save` wrote for ``name``: a
    regular file that :func:`read_card` accepts (signed, format, every field checked),
    whose ``name`` is ``name`` and whose weights file is ``name.<digest>.safetensors``;
    else None."""
    card_path = folder / f"{name}.json"
    try:
        if card_path.is_symlink() or not card_path.is_file():
            return None
        card = read_card(card_path)
    except (OSError, CheckpointError):
        return None
    named = card["weights_file"]
    if card.get("name") != name or named != f"{name}.{card['weights_sha256'][:16]}.safetensors":
        return None
    return card


def _previous_weights(folder: Path, name: str) -> Path | None:
    """The weights file that the card ``folder/name.json`` now there names, if that card is
    our own (:func:`_own_card`) and the file right in ``folder`` is the one it names (its
    SHA-256 the card's); else None.  Only that file is ours to delete: a user's file that a
    foreign or edited card names is not, nor ``name.finetuned-v2.safetensors`` beside it."""
    card = _own_card(folder, name)
    if card is None:
        return None
    path = folder / card["weights_file"]
    return path if _sha256_of(path) == card["weights_sha256"] else None


def check_replaceable(folder: Path | str, name: str) -> None:
    """Refuse (:class:`CheckpointError`, one line) to save ``name`` into ``folder`` where a
    ``name.json`` is there that is not a checkpoint card :func:`save` wrote: it is the
    user's file, and a save would replace it."""
    card_path = Path(folder) / f"{name}.json"
    if not (card_path.exists() or card_path.is_symlink()):
        return
    if _own_card(Path(folder), name) is None:
        raise CheckpointError(
            f"{card_path} is not an attnlab checkpoint card: move it away or save elsewhere"
        )


def _names_weights(card_path: Path, weights: Path) -> bool:
    """Whether the card now at ``card_path`` names ``weights`` (False if it cannot be read)."""
    try:
        return read_card(card_path)["weights_file"] == weights.name
    except (OSError, CheckpointError):
        return False


def save(model, name: str, card: dict, directory: Path | str | None = None) -> Path:
    """Write the checkpoint ``name`` (weights, then the signed card) into ``directory``
    (default: the package's folder); returns the weights path.  See the module docstring."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"a checkpoint name is letters, digits, '-' and '_'; got {name!r}")
    folder = _folder(directory)
    folder.mkdir(parents=True, exist_ok=True)
    # clone: tied weights (one tensor under several names) are stored once per name
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    data = save_tensors(state, metadata={"name": name, "kind": model.kind})
    digest = hashlib.sha256(data).hexdigest()
    weights = folder / f"{name}.{digest[:16]}.safetensors"
    extra = {"name": name, "kind": model.kind, "format": FORMAT}
    extra.update(weights_file=weights.name, weights_sha256=digest)
    card = json.loads(json.dumps({**card, **extra}, allow_nan=False))  # as it will read back
    card["checksum"] = checksum(card)
    text = json.dumps(card, indent=1) + "\n"
    check_card(card, folder / f"{name}.json", len(text.encode()))  # never write what load refuses
    card_path = folder / f"{name}.json"
    check_replaceable(folder, name)
    existed = weights.exists()
    previous = _previous_weights(folder, name)  # named by the card this save replaces
    try:
        write_atomic(weights, data)
        write_atomic(card_path, text)  # the commit point: the new pair is in
    except BaseException:
        # Interrupted: delete the new weights only if the card on disk does not name them
        # (the rename may have happened just before the interrupt: then the new pair is in).
        if not existed and not _names_weights(card_path, weights):
            weights.unlink(missing_ok=True)
        raise
    if previous is not None and previous.name != weights.name:
        previous.unlink(missing_ok=True)  # interrupted here: an orphan, the new pair loads
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


#: Bytes per value of the dtypes a weights file may hold (safetensors' names).
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
               "U8": 1, "BOOL": 1}  # fmt: skip


def _header_error(path: Path, why: str) -> CheckpointError:
    return CheckpointError(f"corrupted checkpoint {path}: {why}")


def _check_entry(key: str, entry: object, room: int, path: Path) -> list[int]:
    """One tensor's header entry: a known dtype, a shape of non-negative ints, and data
    offsets inside the file's ``room`` bytes that hold exactly the shape's values."""
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        raise _header_error(path, f"tensor {key[:40]!r} has a malformed header entry")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise _header_error(path, f"tensor {key[:40]!r} has an unknown dtype")
    ints = lambda xs: isinstance(xs, list) and all(type(x) is int and x >= 0 for x in xs)  # noqa: E731
    if not ints(shape) or len(shape) > 8 or not ints(offsets) or len(offsets) != 2:
        raise _header_error(path, f"tensor {key[:40]!r} has a malformed shape or offsets")
    begin, end = offsets
    if not begin <= end <= room:
        raise _header_error(path, f"tensor {key[:40]!r} lies outside the file")
    if math.prod(shape) * DTYPE_BYTES[dtype] != end - begin:
        raise _header_error(path, f"tensor {key[:40]!r} holds fewer bytes than its shape needs")
    return shape


def _header_shapes(data: bytes, path: Path) -> dict[str, list[int]]:
    """Tensor name -> shape from the safetensors header (8-byte length, then JSON), every
    tensor's bytes checked to lie in the file: a header cannot claim more than the file holds."""
    try:
        n = int.from_bytes(data[:8], "little")
        if not 0 < n <= min(len(data) - 8, MAX_CARD_BYTES):
            raise ValueError("bad header length")
        header = json.loads(data[8 : 8 + n])
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
    except (ValueError, RecursionError) as err:
        raise _header_error(path, str(err).splitlines()[0] or "bad header") from None
    room = len(data) - 8 - n
    return {
        key: _check_entry(key, entry, room, path)
        for key, entry in header.items()
        if key != "__metadata__"
    }


def _model_bytes(model) -> int:
    """Bytes the model's parameters and buffers take once allocated (shapes of a meta model)."""
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors)


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


def _vocabs(card: dict, card_path: Path) -> tuple[Vocab, Vocab]:
    """The source and target vocabularies the card describes (a subword card: one
    SentencePiece model for both sides, whose pieces must be the card's lists)."""
    level = card.get("tokens", "char")
    if level != "subword":
        return Vocab(card["src_vocab"], level), Vocab(card["tgt_vocab"], level)
    try:
        vocab = Vocab.subwords(base64.b64decode(card["subword_model"], validate=True))
    except (ValueError, binascii.Error) as err:
        raise card_error(card_path, f"its subword model is damaged: {err}") from None
    if not card["src_vocab"] == card["tgt_vocab"] == vocab.to_list():
        raise card_error(card_path, "its subword model does not hold the pieces it lists")
    return vocab, vocab


def _build(card: dict, card_path: Path, shapes: dict[str, list[int]], weights: Path):
    """The model the card describes, once its shapes on the meta device match the weights'."""
    src_vocab, tgt_vocab = _vocabs(card, card_path)
    args = (card["kind"], src_vocab, tgt_vocab, card["config"])
    try:
        with torch.device("meta"), _NoDrawOnMeta():
            meta = build_model(*args)  # shapes only: no memory
    except (ValueError, TypeError) as err:
        raise card_error(card_path, str(err).splitlines()[0]) from None
    expected = {k: list(v.shape) for k, v in meta.state_dict().items()}
    if _model_bytes(meta) > MAX_MODEL_BYTES:
        raise card_error(card_path, f"its model would take more than {MAX_MODEL_BYTES} bytes")
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
    return model
