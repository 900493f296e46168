"""Shipped models: safetensors weights + a JSON card, read without unpickling anything.

A checkpoint ``NAME`` is two files in ``src/attnlab/checkpoints/``:

* ``NAME.safetensors``: the state dict (plain tensors; safetensors cannot hold code);
* ``NAME.json``: the card: kind, task, model config, vocabularies, seed, steps, training
  seconds, held-out accuracy, torch version, and the SHA-256 of the weights file.

``load(name)`` (also ``attnlab.load``) rebuilds the model from the card and loads the
weights; ``model.card`` is the card.  A missing file raises :class:`FileNotFoundError`, and a
damaged one (bad JSON, bad safetensors, a checksum or shape mismatch) :class:`CheckpointError`;
both name the file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from attnlab.data import Vocab

__all__ = ["CHECKPOINT_DIR", "SHIPPED", "CheckpointError", "available", "load", "save"]

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"

#: The models the package ships (``python -m attnlab.train --all`` and
#: ``python -m attnlab.experiments.length`` write them).
SHIPPED = (
    "rnnenc-dates",
    "rnnsearch-dates",
    "transformer-dates",
    "rnnenc-reverse",
    "rnnsearch-reverse",
    "rnnenc-reverse-30",
    "rnnsearch-reverse-30",
)


class CheckpointError(ValueError):
    """A checkpoint file exists but cannot be read (its message names the file)."""


def available(directory: Path | str | None = None) -> list[str]:
    """Names that :func:`load` accepts: the shipped ones and any card in ``directory``."""
    folder = Path(directory) if directory is not None else CHECKPOINT_DIR
    found = {p.stem for p in folder.glob("*.json")} if folder.is_dir() else set()
    return sorted(set(SHIPPED) | found)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save(model, name: str, card: dict, directory: Path | str | None = None) -> Path:
    """Write ``NAME.safetensors`` and ``NAME.json`` into ``directory``; returns the weights path."""
    from safetensors.torch import save_file

    folder = Path(directory) if directory is not None else CHECKPOINT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    weights, card_path = folder / f"{name}.safetensors", folder / f"{name}.json"
    tmp_weights, tmp_card = weights.with_suffix(".tmp-w"), card_path.with_suffix(".tmp-c")
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(tmp_weights), metadata={"name": name, "kind": model.kind})
    tmp_weights.chmod(0o644)  # readable by everyone, like the rest of the package
    card = {**card, "weights_file": weights.name, "weights_sha256": _sha256(tmp_weights)}
    tmp_card.write_text(json.dumps(card, indent=1) + "\n")
    tmp_weights.replace(weights)  # both files change at (nearly) the same moment
    tmp_card.replace(card_path)
    return weights


def _paths(name: str | Path, directory: Path | str | None) -> tuple[Path, Path]:
    """(card, weights) paths for a shipped name, or for a path to either file."""
    p = Path(name)
    if isinstance(name, Path) or p.suffix in (".json", ".safetensors") or len(p.parts) > 1:
        return p.with_suffix(".json"), p.with_suffix(".safetensors")
    if not isinstance(name, str) or name not in available(directory):
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(available(directory))}")
    folder = Path(directory) if directory is not None else CHECKPOINT_DIR
    return folder / f"{name}.json", folder / f"{name}.safetensors"


def read_card(path: Path) -> dict:
    """The JSON card at ``path`` (FileNotFoundError / CheckpointError naming it)."""
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint card not found: {path}")
    try:
        card = json.loads(path.read_text())
        if not isinstance(card, dict) or "kind" not in card or "config" not in card:
            raise ValueError("it is not a model card (no 'kind' or 'config')")
    except (ValueError, UnicodeDecodeError) as err:
        raise CheckpointError(f"corrupted checkpoint card {path}: {err}") from None
    return card


def _build(card: dict, path: Path):
    from attnlab.seq2seq import RNNConfig, RNNEncDec, RNNSearch
    from attnlab.transformer import Transformer, TransformerConfig

    classes = {
        "rnnencdec": (RNNEncDec, RNNConfig),
        "rnnsearch": (RNNSearch, RNNConfig),
        "transformer": (Transformer, TransformerConfig),
    }
    try:
        cls, config_cls = classes[card["kind"]]
        config = config_cls(**card["config"])
        return cls(Vocab(card["src_vocab"]), Vocab(card["tgt_vocab"]), config)
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"corrupted checkpoint card {path}: {err!r}") from None


def load(name: str | Path, directory: Path | str | None = None):
    """The shipped model ``name`` (e.g. "rnnsearch-dates"), or the checkpoint at a path.

    Reads the card, builds the model, and loads the weights with safetensors (no pickle);
    returns the model in eval mode with ``model.card`` set.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    card_path, weights_path = _paths(name, directory)
    card = read_card(card_path)
    model = _build(card, card_path)
    if not weights_path.is_file():
        raise FileNotFoundError(f"checkpoint weights not found: {weights_path}")
    expected = card.get("weights_sha256")
    if expected is not None and _sha256(weights_path) != expected:
        raise CheckpointError(
            f"corrupted checkpoint {weights_path}: its SHA-256 does not match the card's"
        )
    try:
        state = load_file(str(weights_path))
        model.load_state_dict(state, strict=True)
    except (SafetensorError, RuntimeError, ValueError, OSError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CheckpointError(f"corrupted checkpoint {weights_path}: {first}") from None
    model.eval()
    model.card = card
    return model
