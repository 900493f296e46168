"""Every user's Jupyter server on the course hub (on JUPYTER_CONFIG_PATH, set by the hub).

Students get nbgrader's Assignments tab; the formgrader's server side is an instructor's.  The
Zero to JupyterHub image (deploy/z2jh/Dockerfile) installs this file too, for the slideshow.

The slideshow (jupyterlab_rise's own page, /rise/...) loads every installed lab extension into
a page built with an older JupyterLab than the lab's.  Two of them need parts of the full lab
that this page does not share: Notebook 7's lab extension (it needs ``@jupyterlab/docregistry``
from the page and fails to start) and nbgrader's (it reads Notebook 7's application module from
that half-started extension): each load of a slideshow then threw a ReferenceError, a different
one from load to load as the extensions' scripts raced.  Neither has a use in a slideshow, so
the slideshow reads its extensions from a folder of links to all the others, rebuilt at every
start; the lab itself keeps them all.
"""

import os
import shutil
from pathlib import Path

from jupyter_core.paths import jupyter_path, jupyter_runtime_dir

NOT_IN_SLIDESHOW = ("@jupyter-notebook/lab-extension", "@jupyter/nbgrader")


def slideshow_extensions(folder: Path) -> Path:
    """``folder`` with a link to each installed lab extension but NOT_IN_SLIDESHOW."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # Jupyter's runtime folder
    folder.mkdir(exist_ok=True)
    for root in map(Path, jupyter_path("labextensions")):
        for package in [*root.glob("[!@]*/package.json"), *root.glob("@*/*/package.json")]:
            name = package.parent.relative_to(root).as_posix()
            link = folder / name
            if name in NOT_IN_SLIDESHOW or os.path.lexists(link):
                continue  # the first folder that has a name wins, as in JupyterLab
            link.parent.mkdir(exist_ok=True)
            link.symlink_to(package.parent, target_is_directory=True)
    return folder


c = get_config()  # noqa: F821  (jupyter_server provides it)
if os.environ.get("ATTNLAB_ROLE") == "student":  # the hub sets it for every user
    c.ServerApp.jpserver_extensions = {"nbgrader.server_extensions.formgrader": False}
c.RiseApp.labextensions_path = [
    str(slideshow_extensions(Path(jupyter_runtime_dir()) / "slideshow-labextensions"))
]
