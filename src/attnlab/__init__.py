"""attnlab: a live lecture on attention.

    >>> import attnlab
    >>> model = attnlab.load("rnnsearch-dates")
    >>> model.translate("3 May 1979")
    '1979-05-03'

Everything else is imported from its module (``from attnlab.attention import attention``);
``docs/architecture.md`` says which module holds what.
"""

from __future__ import annotations

__all__ = ["load"]


def __getattr__(name: str):
    # ``attnlab.load`` is :func:`attnlab.training.checkpoints.load` itself (one function, so
    # ``attnlab.load??`` shows what runs), imported on first use so that `import attnlab`
    # does not load torch (1.6 s, measured; the scripts that only need a path or a name stay
    # fast; tests/test_checkpoints.py).
    if name == "load":
        from attnlab.training.checkpoints import load

        return load
    raise AttributeError(f"module 'attnlab' has no attribute {name!r}")
