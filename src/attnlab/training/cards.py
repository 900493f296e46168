"""The checkpoint card: the JSON manifest of a shipped model, and every rule it must meet.

A card (``NAME.json``, see :mod:`attnlab.training.checkpoints`) names the model's kind,
config, vocabularies and training record, its weights file and their SHA-256, and is signed
by ``checksum``: the SHA-256 of its canonical JSON without that field
(``json.dumps(card, sort_keys=True, separators=(",", ":"))``).  The checksum catches damage
and edits, not forgery (anyone can recompute it); the bounds checked here are what make a
crafted card harmless: :func:`read_card` refuses a card over :data:`MAX_CARD_BYTES` before
parsing it, and :func:`check_card` checks every field (kind known to
:mod:`attnlab.models.registry`, config values of the right type within bounds, vocabularies
of distinct single characters or words) before a single tensor is built.  Every refusal is a
:class:`CheckpointError` naming the card's file.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import typing
from dataclasses import fields
from pathlib import Path

from attnlab.attention import SCORES
from attnlab.models.registry import MODEL_KINDS

__all__ = [
    "FORMAT",
    "MAX_CARD_BYTES",
    "CheckpointError",
    "card_error",
    "check_card",
    "checksum",
    "read_card",
]

FORMAT = 2  # the card's "format": 2 = signed card, content-addressed weights
MAX_CARD_BYTES = 1_000_000
MAX_VOCAB = 256  # characters per vocabulary
MAX_WORD_VOCAB = 20_000  # words per vocabulary of a word model (card "tokens": "word")
MAX_WORD_CHARS = 64
MAX_SUBWORD_MODEL_CHARS = 600_000  # a subword card's SentencePiece model, in base64
BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
#: Bounds of the integer config fields (any other integer field: 1..4096).
INT_BOUNDS = {"num_layers": (1, 16), "num_heads": (1, 64), "max_src_len": (1, 1000)}
INT_BOUNDS["max_tgt_len"] = INT_BOUNDS["max_src_len"]
SIZE_BOUNDS = (1, 4096)
STR_CHOICES = {"score": tuple(SCORES)}  # text config fields -> the values allowed
WEIGHTS_FILE = re.compile(r"([A-Za-z0-9][A-Za-z0-9_-]{0,99})\.[0-9a-f]{16}\.safetensors")
HEX64 = re.compile(r"[0-9a-f]{64}")


class CheckpointError(ValueError):
    """A checkpoint file exists but cannot be read (its message names the file)."""


def checksum(card: dict) -> str:
    """SHA-256 of the card's canonical JSON without its ``checksum`` field."""
    body = {k: v for k, v in card.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def card_error(path: Path, why: str) -> CheckpointError:
    """The refusal of the card at ``path``, one line saying why."""
    return CheckpointError(f"checkpoint card {path} refused: {why}")


def _is_word(w: object) -> bool:
    """One word of a word model: text of 1 to MAX_WORD_CHARS characters, no spaces."""
    return isinstance(w, str) and 0 < len(w) <= MAX_WORD_CHARS and w.split() == [w]


def _check_word_vocab(words: object, what: str, path: Path) -> None:
    if not isinstance(words, list) or not 1 <= len(words) <= MAX_WORD_VOCAB:
        raise card_error(path, f"{what} must be a list of 1 to {MAX_WORD_VOCAB} words")
    if not all(_is_word(w) for w in words):
        raise card_error(
            path, f"{what} must hold words of 1 to {MAX_WORD_CHARS} characters, no spaces"
        )
    if len(set(words)) != len(words):
        raise card_error(path, f"{what} repeats a word")


def _check_vocab(chars: object, what: str, path: Path, level: object = "char") -> None:
    if level in ("word", "subword"):  # a subword card lists its pieces like words
        return _check_word_vocab(chars, what, path)
    if level != "char":
        raise card_error(path, "'tokens' must be 'char', 'word' or 'subword'")
    if not isinstance(chars, list) or not 1 <= len(chars) <= MAX_VOCAB:
        raise card_error(path, f"{what} must be a list of 1 to {MAX_VOCAB} characters")
    if not all(isinstance(c, str) and len(c) == 1 for c in chars):
        raise card_error(path, f"{what} must hold single characters")
    if len(set(chars)) != len(chars):
        raise card_error(path, f"{what} repeats a character")


def _check_value(key: str, value: object, kind: type, path: Path) -> None:
    # ``kind``: the field's resolved type hint (typing.get_type_hints), bool, int, float or str
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        lo, hi = INT_BOUNDS.get(key, SIZE_BOUNDS)
        ok = type(value) is int and lo <= value <= hi
    elif kind is float:
        hi = 0.9 if key == "dropout" else 1e6  # a probability (P_drop) or a size
        ok = type(value) in (int, float) and math.isfinite(value) and 0 <= value <= hi
    else:  # str: a name, one of a known set (RNNSearch's score)
        ok = isinstance(value, str) and value in STR_CHOICES.get(key, (value,)) and len(value) <= 64
    if not ok:
        raise card_error(
            path, f"config value {key}={value!r} is out of bounds or of the wrong type"
        )


def _check_config(config: object, config_class: type, path: Path) -> None:
    if not isinstance(config, dict):
        raise card_error(path, "'config' must be an object")
    hints = typing.get_type_hints(config_class)
    allowed = {f.name for f in fields(config_class)}
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise card_error(path, f"unknown config field {unknown[0][:40]!r}")
    for key, value in config.items():
        _check_value(key, value, hints.get(key, str), path)
    d_model, heads = config.get("d_model"), config.get("num_heads")
    if isinstance(d_model, int) and isinstance(heads, int) and d_model % heads:
        raise card_error(path, f"num_heads={heads} does not divide d_model={d_model}")


def _check_signature(card: dict, path: Path) -> None:
    if "checksum" not in card:
        raise card_error(path, "it has no checksum (an unsigned or old card)")
    if not isinstance(card["checksum"], str) or card["checksum"] != checksum(card):
        raise card_error(path, "its checksum does not match its contents (edited or damaged)")
    if card.get("format") != FORMAT:
        raise card_error(path, f"format {card.get('format')!r} is not {FORMAT}")
    if not WEIGHTS_FILE.fullmatch(str(card.get("weights_file"))):
        raise card_error(path, "'weights_file' is not a weights file name")
    if not HEX64.fullmatch(str(card.get("weights_sha256"))):
        raise card_error(path, "'weights_sha256' is not a SHA-256")


def _check_numbers(card: dict, path: Path) -> None:
    acc = card.get("heldout_accuracy", 0.0)
    if type(acc) not in (int, float) or not 0 <= acc <= 1:
        raise card_error(path, "'heldout_accuracy' must be a number in [0, 1]")
    for key in ("steps", "parameters", "seed"):
        value = card.get(key, 0)
        if type(value) is not int or not 0 <= value < 2**64:
            raise card_error(path, f"{key!r} must be a non-negative integer")


def check_card(card: object, path: Path, size: int) -> None:
    """Refuse (:class:`CheckpointError`) a card of ``size`` bytes that breaks any rule."""
    if size > MAX_CARD_BYTES:
        raise card_error(path, f"it is larger than {MAX_CARD_BYTES} bytes")
    if not isinstance(card, dict):
        raise card_error(path, "it is not a JSON object")
    _check_signature(card, path)
    if not isinstance(card.get("kind"), str) or card["kind"] not in MODEL_KINDS:
        raise card_error(path, f"unknown kind; choose one of {', '.join(MODEL_KINDS)}")
    _check_config(card.get("config"), MODEL_KINDS[card["kind"]].config_class, path)
    level = card.get("tokens", "char")  # word models: "word"
    _check_vocab(card.get("src_vocab"), "src_vocab", path, level)
    _check_vocab(card.get("tgt_vocab"), "tgt_vocab", path, level)
    _check_subword_model(card, path, level)
    _check_numbers(card, path)


def _check_subword_model(card: dict, path: Path, level: object) -> None:
    """A subword card's ``subword_model``: the SentencePiece model, base64, size-capped."""
    model = card.get("subword_model")
    if level != "subword":
        if model is not None:
            raise card_error(path, "'subword_model' belongs to a subword card only")
        return
    if not isinstance(model, str) or not 0 < len(model) <= MAX_SUBWORD_MODEL_CHARS:
        raise card_error(
            path, f"'subword_model' must be base64 text of at most {MAX_SUBWORD_MODEL_CHARS}"
        )
    if not BASE64.fullmatch(model):
        raise card_error(path, "'subword_model' is not base64 text")


def _no_constants(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def read_card(path: Path | str) -> dict:
    """The checked card at ``path`` (FileNotFoundError / CheckpointError naming it)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint card not found: {path}")
    with path.open("rb") as f:
        raw = f.read(MAX_CARD_BYTES + 1)  # never more than this in memory
    if len(raw) > MAX_CARD_BYTES:
        raise card_error(path, f"it is larger than {MAX_CARD_BYTES} bytes")
    try:
        card = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
    except RecursionError:
        raise card_error(path, "its JSON is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise card_error(path, str(err).splitlines()[0]) from None
    check_card(card, path, len(raw))
    return card
