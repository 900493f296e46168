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


def load(name, directory=None):
    """A shipped model by name (e.g. "rnnsearch-dates"): :func:`attnlab.training.checkpoints.load`."""
    # Imported here so that `import attnlab` does not load torch (1.6 s, measured; the
    # scripts that only need a path or a name stay fast; tests/test_checkpoints.py).
    from attnlab.training.checkpoints import load as load_checkpoint

    return load_checkpoint(name, directory)
