"""attnlab: a live lecture on attention.

``import attnlab`` stays light (no torch): ``attnlab.load`` and the submodules are imported
on first use.

    >>> import attnlab
    >>> model = attnlab.load("rnnsearch-dates")
    >>> model.translate("3 May 1979")
    '1979-05-03'
"""

from __future__ import annotations

import importlib

__all__ = ["load"]


def load(name: str, directory=None):
    """A shipped model by name ("rnnenc-dates", "rnnsearch-dates", "transformer-dates",
    "rnnenc-reverse", "rnnsearch-reverse"); see :func:`attnlab.checkpoints.load`."""
    from attnlab.checkpoints import load as _load

    return _load(name, directory)


def __getattr__(name: str):
    # `attnlab.data`, `attnlab.decode`, ... without importing each one by hand, and the
    # attention core's API at the top level: `attnlab.scaled_dot_product_attention`, ...
    try:
        return importlib.import_module(f"attnlab.{name}")
    except ModuleNotFoundError as err:
        if err.name != f"attnlab.{name}":
            raise
    attention = importlib.import_module("attnlab.attention")
    if name in attention.__all__:
        return getattr(attention, name)
    raise AttributeError(f"module 'attnlab' has no attribute {name!r}")
