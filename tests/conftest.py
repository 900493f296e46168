"""Shared test settings: one torch thread, and the hypothesis profiles.

``ci`` (the default) keeps the property tests well under a minute on two cores;
``HYPOTHESIS_PROFILE=dev`` runs many more examples when hunting for a bug.
"""

import os

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


settings.register_profile(
    "ci",
    deadline=None,  # a shared 2-core machine makes single examples slow now and then
    max_examples=50,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,  # a failure prints the @reproduce_failure line
)
settings.register_profile("dev", deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
