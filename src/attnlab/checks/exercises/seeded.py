"""Modules of the library built for an exercise without moving the student's random seed.

A reference runs the library's own module holding the weights it was given
(:func:`library_module`); a hidden example builds modules from a fixed seed
(:func:`kept_rng`).  Building a module draws its initial weights from torch's global RNG, and
a reference also runs in the student's notebook (solutions mode, ``reference(name)``), where
a draw would change what their next ``torch.randn`` gives: both build inside
:func:`kept_rng`, which puts the global RNG back afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

import torch
from torch import Tensor, nn

__all__ = ["kept_rng", "library_module"]

M = TypeVar("M", bound=nn.Module)


@contextmanager
def kept_rng(seed: int | None = None) -> Iterator[None]:
    """A block whose random draws (seeded with ``seed``, if given) leave torch's global RNG
    as it was before the block."""
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        yield


def library_module(make: Callable[[], M], weights: Mapping[str, Tensor] | None = None) -> M:
    """``make()`` (a module of the library) built inside :func:`kept_rng`, then holding
    ``weights`` (parameter name -> tensor of exactly that parameter's shape)."""
    with kept_rng():
        module = make()
    with torch.no_grad():
        for name, weight in (weights or {}).items():
            parameter = module.get_parameter(name)
            if parameter.shape != weight.shape:  # copy_ would broadcast a wrong shape silently
                raise ValueError(f"{name} is {tuple(parameter.shape)}; got {tuple(weight.shape)}")
            parameter.copy_(weight)
    return module
