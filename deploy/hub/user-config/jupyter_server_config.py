"""Every user's Jupyter server on the course hub (on JUPYTER_CONFIG_PATH, set by the hub).

Students get nbgrader's Assignments tab; the formgrader's server side is an instructor's.
"""

import os

c = get_config()  # noqa: F821  (jupyter_server provides it)
if os.environ.get("ATTNLAB_ROLE") != "instructor":
    c.ServerApp.jpserver_extensions = {"nbgrader.server_extensions.formgrader": False}
