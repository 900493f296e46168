r"""The exercises: one module per family, each with its references and its checks.

==============================  ===============================================================
:mod:`.scores`                  ``dot_score``, ``general_score``, ``additive_score``
:mod:`.masked_softmax`          ``masked_softmax``
:mod:`.decode_step`             ``decode_step`` (one step of RNNSearch)
:mod:`.scaled_dot_product`      ``scaled_dot_product_attention``
:mod:`.multi_head`              ``multi_head_attention``
:mod:`.positional_encoding`     ``positional_encoding``
:mod:`.encoder_block`           ``encoder_block`` (pre-LN)
==============================  ===============================================================

Each ``check_<name>(fn)`` runs the student's ``fn`` on small hidden examples, compares it with
the reference, and names the first thing that is wrong (see :mod:`attnlab.checks`).  Each
module gives its ``REFERENCES`` and ``BODIES`` (a check without its harness); this package
puts them in the notebook's order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from attnlab.checks.exercises import (
    decode_step,
    encoder_block,
    masked_softmax,
    multi_head,
    positional_encoding,
    scaled_dot_product,
    scores,
)
from attnlab.checks.exercises.decode_step import check_decode_step
from attnlab.checks.exercises.encoder_block import check_encoder_block, self_attention
from attnlab.checks.exercises.masked_softmax import check_masked_softmax
from attnlab.checks.exercises.multi_head import check_multi_head_attention
from attnlab.checks.exercises.positional_encoding import check_positional_encoding
from attnlab.checks.exercises.scaled_dot_product import check_scaled_dot_product_attention
from attnlab.checks.exercises.scores import (
    check_additive_score,
    check_dot_score,
    check_general_score,
)
from attnlab.checks.harness import solutions_mode
from attnlab.checks.results import LAST, Summary

__all__ = [
    "EXERCISES",
    "reference",
    "exercise",
    "check_dot_score",
    "check_general_score",
    "check_additive_score",
    "check_masked_softmax",
    "check_decode_step",
    "check_scaled_dot_product_attention",
    "check_multi_head_attention",
    "check_positional_encoding",
    "check_encoder_block",
    "self_attention",
    "BODIES",
    "summary",
]

_FAMILIES = (
    scores,
    masked_softmax,
    decode_step,
    scaled_dot_product,
    multi_head,
    positional_encoding,
    encoder_block,
)

#: Read-only: a student's function cannot put itself in as a reference.
_REFERENCES: Mapping[str, Callable] = MappingProxyType(
    {name: ref for family in _FAMILIES for name, ref in family.REFERENCES.items()}
)

#: The exercises, in the notebook's order.
EXERCISES = tuple(_REFERENCES)

#: Each exercise's body: the check without its harness (in_model runs them first).
BODIES: Mapping[str, Callable[[Callable], str]] = MappingProxyType(
    {name: body for family in _FAMILIES for name, body in family.BODIES.items()}
)


def reference(name: str) -> Callable:
    """The reference answer of exercise ``name`` (same signature as the student's function)."""
    if name not in _REFERENCES:
        raise ValueError(f"unknown exercise {name!r}; the exercises are {', '.join(EXERCISES)}")
    return _REFERENCES[name]


def exercise(name: str) -> Callable[[Callable], Callable]:
    """Decorator on the student's function: the reference in solutions mode, else unchanged."""
    ref = reference(name)

    def decorate(fn: Callable) -> Callable:
        return ref if solutions_mode() else fn

    return decorate


def summary() -> Summary:
    """The latest check of each exercise in this session."""
    return Summary(tuple((name, LAST.get(name)) for name in EXERCISES))
