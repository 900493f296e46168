"""Shared test settings: one torch thread, and the hypothesis profiles.

``ci`` (the default) keeps the property tests well under a minute on two cores;
``HYPOTHESIS_PROFILE=dev`` runs many more examples when hunting for a bug.
"""

import contextlib
import io
import os
import subprocess

import pytest
import torch
from hypothesis import HealthCheck, settings


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """Tiny models: one torch thread is as fast, and far faster when the cores are shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def attnlab_command(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """``python -m attnlab ARGS`` run in this process (the same ``main``, without paying a
    fresh interpreter's imports): its exit status and what it printed."""
    from attnlab.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            status = main(list(args))
        except SystemExit as exit_:  # argparse refuses with exit status 2
            status = exit_.code
    return subprocess.CompletedProcess(args, status or 0, out.getvalue(), err.getvalue())


@pytest.fixture
def attnlab_cli():
    """:func:`attnlab_command`, for tests that run the command line."""
    return attnlab_command


settings.register_profile(
    "ci",
    deadline=None,  # a shared 2-core machine makes single examples slow now and then
    max_examples=50,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,  # a failure prints the @reproduce_failure line
)
settings.register_profile("dev", deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
