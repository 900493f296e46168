r"""The course sandbox: bubblewrap around a process that runs a student's code.

:func:`prefix` is a command line prefix (``bwrap ... --``) under which a program sees:

* the Python it runs on, the environment's packages and attnlab with its shipped models,
  read-only (nothing else of the machine's home folders, the course folder or the
  gradebook);
* ``readable`` folders read-only and ``writable`` folders read-write (the student's own
  notebook folder; the folder of a kernel's connection files);
* a private, empty, writable ``/tmp`` (also its ``HOME``);
* no network (its own network namespace: loopback only, unconnected), its own process
  namespace (whatever it starts ends with it), no capabilities, user id 65534 (nobody) in a
  user namespace of its own, an empty environment but for :data:`ENVIRONMENT`.

:func:`limits` is the memory and CPU-time limit of each such process (``prlimit``).
:func:`available` says why the sandbox cannot be used here, or None: the course tool refuses
to autograde without it rather than grade unprotected.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from attnlab.files import CHECKPOINT_DIR

__all__ = ["ENVIRONMENT", "MEMORY", "CPU_SECONDS", "available", "python", "prefix", "limits"]

#: The environment inside the sandbox: nothing of the caller's.
ENVIRONMENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
    "MPLCONFIGDIR": "/tmp",
    "IPYTHONDIR": "/tmp/ipython",
    "JUPYTER_CONFIG_DIR": "/tmp/jupyter",
}
MEMORY = 6 * 2**30  # bytes of address space for one notebook's kernel (torch maps ~1.5 GB)
CPU_SECONDS = 900  # CPU seconds for one notebook (a whole notebook takes about 60)

_SYSTEM = ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/alternatives", "/etc/ld.so.cache")


def _package_folders() -> list[Path]:
    """The Python installation, the environment and attnlab's own folder (with its models)."""
    package = Path(__file__).resolve().parents[1]  # attnlab/
    folders = {
        Path(sys.base_prefix).resolve(),
        Path(sys.prefix).resolve(),
        Path(sys.executable).resolve().parent.parent,
        package.parent,  # src/ of a checkout (an editable install), or site-packages
    }
    folders.add(Path(CHECKPOINT_DIR).resolve())
    return sorted(folders)


def python() -> str:
    """This Python, by a path that also holds inside the sandbox (no ``..``, the
    environment's own name, not the interpreter it links to)."""
    return os.path.normpath(os.path.abspath(sys.executable))


def available() -> str | None:
    """Why the sandbox cannot run here (one line), or None when it can."""
    if shutil.which("bwrap") is None:
        return (
            "bubblewrap (`bwrap`) is not installed: `make setup` installs it as root "
            "(`apt-get install bubblewrap`); refusing to grade student code without a sandbox"
        )
    if shutil.which("prlimit") is None:
        return "`prlimit` (util-linux) is missing: refusing to grade without memory limits"
    try:
        done = subprocess.run([*prefix(), "/bin/true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap does not start here ({error}); refusing to grade without a sandbox"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return (
            f"bubblewrap cannot create its namespaces here ({why}); user namespaces may be "
            "disabled (sysctl kernel.unprivileged_userns_clone): refusing to grade without it"
        )
    return None


def limits(memory: int = MEMORY, cpu_seconds: int = CPU_SECONDS) -> list[str]:
    """``prlimit`` with the memory and CPU-time limits, as a command line prefix."""
    return [
        shutil.which("prlimit") or "prlimit",
        f"--as={memory}",
        f"--cpu={cpu_seconds}",
        "--core=0",
        "--",
    ]


def prefix(
    readable: Sequence[Path | str] = (),
    writable: Sequence[Path | str] = (),
    cwd: Path | str | None = None,
) -> list[str]:
    """``bwrap ... --``: run the rest of the command line in the sandbox (module docstring)."""
    argv = [shutil.which("bwrap") or "bwrap"]
    for folder in _SYSTEM:
        if Path(folder).exists():
            argv += ["--ro-bind", folder, folder]
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]  # first: binds go over it
    for folder in [*_package_folders(), *map(Path, readable)]:
        argv += ["--ro-bind", str(folder), str(folder)]
    for folder in writable:
        argv += ["--bind", str(folder), str(folder)]
    argv += ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    argv += ["--uid", "65534", "--gid", "65534", "--hostname", "sandbox", "--clearenv"]
    for key, value in ENVIRONMENT.items():
        argv += ["--setenv", key, value]
    if cwd is not None:
        argv += ["--chdir", str(cwd)]
    return [*argv, "--"]
