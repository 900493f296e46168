"""The one registry of model kinds: ``"rnnencdec"``, ``"rnnsearch"``, ``"transformer"``.

Loading (:mod:`attnlab.training.checkpoints`) and training (:mod:`attnlab.training.loop`) build
models through :func:`build_model`; ``python -m attnlab train --model`` takes these names.  (Checkpoint *file*
names such as ``rnnenc-dates`` are names of files, not kinds.)

    >>> from attnlab.text.tasks import get_task
    >>> task = get_task("dates")
    >>> build_model("rnnsearch", task.src_vocab, task.tgt_vocab).kind
    'rnnsearch'
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.models.base import Seq2SeqModel
from attnlab.models.rnn import RNNConfig, RNNEncDec, RNNSearch
from attnlab.models.transformer import Transformer, TransformerConfig
from attnlab.text.vocab import Vocab

__all__ = ["ModelKind", "MODEL_KINDS", "build_model", "check_kind"]


@dataclass(frozen=True)
class ModelKind:
    """A kind of model: its name, its class and the dataclass of its sizes."""

    name: str
    model_class: type[Seq2SeqModel]
    config_class: type


MODEL_KINDS: dict[str, ModelKind] = {
    kind.name: kind
    for kind in (
        ModelKind("rnnencdec", RNNEncDec, RNNConfig),
        ModelKind("rnnsearch", RNNSearch, RNNConfig),
        ModelKind("transformer", Transformer, TransformerConfig),
    )
}


def check_kind(kind: str) -> ModelKind:
    """The :class:`ModelKind` called ``kind``; ValueError naming the known kinds if none is."""
    if kind not in MODEL_KINDS:
        raise ValueError(f"unknown model kind {kind!r}; choose one of {', '.join(MODEL_KINDS)}")
    return MODEL_KINDS[kind]


def build_model(
    kind: str, src_vocab: Vocab, tgt_vocab: Vocab, config: object | None = None
) -> Seq2SeqModel:
    """A fresh, untrained model of ``kind`` (a key of :data:`MODEL_KINDS`).

    ``config`` is the kind's config dataclass, a dict of its fields, or None (the class's
    defaults).  An unknown kind or a config of the wrong type raises ValueError.
    """
    entry = check_kind(kind)
    if isinstance(config, dict):
        try:
            config = entry.config_class(**config)
        except TypeError as err:
            raise ValueError(f"bad {entry.config_class.__name__} for {kind}: {err}") from None
    if config is not None and not isinstance(config, entry.config_class):
        raise ValueError(
            f"a {kind} model needs a {entry.config_class.__name__}; got {type(config).__name__}"
        )
    return entry.model_class(src_vocab, tgt_vocab, config)
