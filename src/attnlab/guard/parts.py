r"""The replaceable parts of the models, and the one way to swap a function in for one.

A model calls each part through an attribute that it looks up at call time, so a function put
in that attribute runs inside the trained model:

* ``score``: ``RNNSearch.score`` (a module), e = score(queries (B, m, d_s), keys (B, n, d_h))
  -> (B, m, n);
* ``masked_softmax``: ``attnlab.attention.masked_softmax``, alpha = masked_softmax(scores,
  mask) (``attention`` and ``scaled_dot_product_attention`` read it from the module);
* ``scaled_dot_product_attention``: ``attnlab.attention.scaled_dot_product_attention``, every
  head of ``MultiHeadAttention``;
* ``decode_step``: ``RNNSearch.decode_step``, s_t, c_t, alpha_t = decode_step(s_{t-1}, h,
  y_{t-1}, score, cell), the score hiding the padding;
* ``encoder_block``: ``forward`` of each ``Transformer.encoder_layers[l]``, x = block(x
  (B, n, d), src_mask (B, 1, n)).

:func:`swap` puts a function in every place of a part for the length of a ``with`` block and
puts the library's back afterwards, whatever happens inside; ``make(original)`` builds the
replacement from what it replaces (so a student's score can be handed the trained weights of
the score it replaces); :func:`swapped` swaps one attribute.  They are the library's one way
to put a function in another's place: the exercises' in-model checks, their references and
known mistakes (a student's ``self_attn`` in an encoder layer, a bent ``split_heads``), the
DecodeStepper's ``score=``, and :func:`attnlab.guard.library.library_in_place` all swap through
them.  They only swap: guarding the student's code (a time budget, state put back) is
:mod:`attnlab.guard.sandbox`'s job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from torch import nn

from attnlab import attention

__all__ = ["PARTS", "ABSENT", "Part", "places", "swapped", "swap"]

#: The parts a function can be swapped in for, and what each is.
PARTS = {
    "score": "RNNSearch's score e_{t,i} = score(s_{t-1}, h_i)",
    "masked_softmax": "the softmax of every attention: attnlab.attention.masked_softmax",
    "scaled_dot_product_attention": "every head of MultiHeadAttention: "
    "attnlab.attention.scaled_dot_product_attention",
    "decode_step": "RNNSearch's decoding step (s_{t-1}, h, y_{t-1}) -> (s_t, c_t, alpha_t)",
    "encoder_block": "a Transformer encoder layer x -> x + SelfAttn(LN(x)) -> ... + FFN(LN(x))",
}


#: Given as the function to :func:`swapped`: the attribute is not there inside the block.
ABSENT = object()


class Part(nn.Module):
    """A plain function standing where a model holds a module (its score, say)."""

    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def extra_repr(self) -> str:
        return getattr(self.fn, "__name__", type(self.fn).__name__)


def places(model: nn.Module, part: str) -> list[tuple[object, str]]:
    """Where ``model`` calls ``part``: a list of (owner, attribute name)."""
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}; the parts are {', '.join(PARTS)}")
    if part in ("masked_softmax", "scaled_dot_product_attention"):
        return [(attention, part)]
    if part == "encoder_block":
        layers = getattr(model, "encoder_layers", None)
        found = [(layer, "forward") for layer in layers or ()]
    else:
        found = [(model, part)] if hasattr(model, part) else []
    if not found:
        raise ValueError(f"{type(model).__name__} has no {part} to replace")
    return found


@contextmanager
def swapped(owner: object, name: str, fn: Callable) -> Iterator[Callable]:
    """``owner.name`` is ``fn`` inside the block; the original is put back on leaving it.

    Where the owner holds a module there, ``fn`` is wrapped in a :class:`Part` (an
    ``nn.Module`` accepts only a module in a module's place).  An attribute the owner only
    inherited (a method, a class attribute) is removed again rather than copied onto it.
    ``fn`` = :data:`ABSENT` removes the owner's own attribute for the block (an attribute a
    user added to a library class, say).
    """
    own = name in _own_attributes(owner)
    original = getattr(owner, name) if own else ABSENT
    if fn is ABSENT:
        delattr(owner, name)
    else:
        if isinstance(getattr(owner, name, None), nn.Module) and not isinstance(fn, nn.Module):
            fn = Part(fn)
        setattr(owner, name, fn)
    try:
        yield fn
    finally:
        if original is not ABSENT:
            setattr(owner, name, original)
        elif name in _own_attributes(owner):  # it was inherited, or not there at all
            delattr(owner, name)


def _own_attributes(owner: object) -> set[str]:
    own = set(getattr(owner, "__dict__", {}))
    if isinstance(owner, nn.Module):
        own |= set(owner._modules) | set(owner._parameters) | set(owner._buffers)
    return own


@contextmanager
def swap(model: nn.Module, part: str, make: Callable[[Callable], Callable]) -> Iterator[None]:
    """Swap ``make(original)`` in for every place of ``part`` in ``model`` inside the block."""
    with ExitStack() as stack:
        for owner, name in places(model, part):
            stack.enter_context(swapped(owner, name, make(getattr(owner, name))))
        yield
