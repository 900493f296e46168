"""Shared test settings: the hypothesis profiles.

``ci`` (the default) keeps the property tests well under a minute on two cores;
``HYPOTHESIS_PROFILE=dev`` runs many more examples when hunting for a bug.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,  # a shared 2-core machine makes single examples slow now and then
    max_examples=50,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,  # a failure prints the @reproduce_failure line
)
settings.register_profile("dev", deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
