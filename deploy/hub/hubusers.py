"""Who a hub user is on this machine, and what their server may use.

* ``Settings``: what serve.sh decided (ATTNLAB_HUB_* in the hub's environment);
* ``system_name``: a hub name -> the system account it runs as (the prefix, then the name, or
  a digest of it when it is not a plain account name: LTI users are e-mail addresses);
* ``CourseSpawner``: LocalProcessSpawner, plus: the account is created on the first start
  (useradd, in the group of the course, home of mode 0700), refusing a name that is an account
  the hub did not create (``root`` cannot sign up and run as root); the deck and its pictures
  are copied into ``~/attnlab`` once (never over the user's copy); an instructor gets a course
  folder ``~/attention-course`` with the nbgrader source of the exercises; and the server runs
  with these limits, set in the child before it runs anything:

  - address space (RLIMIT_AS) ``memory`` per process: the server and each kernel;
  - CPU time (RLIMIT_CPU) ``cpu_seconds`` per process: a kernel past it is killed;
  - processes and threads (RLIMIT_NPROC) ``processes`` for the whole account (the kernel
    counts them per user id): a fork bomb stops there;
  - priority: nice 5, so the hub and proxy stay responsive.

  These are rlimits, not cgroups: they bound each process, not the sum of a user's processes.
  Where systemd runs, jupyterhub-systemdspawner's SystemdSpawner enforces ``mem_limit`` and
  ``cpu_limit`` per user with cgroups (see README).
"""

from __future__ import annotations

import asyncio
import grp
import hashlib
import json
import os
import pwd
import re
import resource
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
EXERCISES = REPO / "notebooks" / "07_attention_exercises.ipynb"
DECK_FILES = ("notebooks", "pics")  # copied into ~/attnlab
COURSE_FOLDER = "attention-course"
PLAIN_NAME = re.compile(r"[a-z][a-z0-9_-]*")
MAX_ACCOUNT_NAME = 32  # useradd's limit


class SetupError(RuntimeError):
    """A setting or a file that the hub cannot start with (one line for the admin)."""


def _size(text: str) -> int:
    match = re.fullmatch(r"(\d+)([KMG]?)", text.strip().upper())
    if not match:
        raise SetupError(f"a size is a number with K, M or G; got {text[:20]!r}")
    return int(match.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match.group(2)]


@dataclass(frozen=True)
class Settings:
    ip: str
    port: int
    hub_port: int
    proxy_api_port: int
    state: Path
    auth: str  # native | lti13
    instructors: tuple[str, ...]
    course_id: str
    exchange: Path
    homes: Path
    prefix: str  # system account name = prefix + hub name
    group: str  # every account the hub creates is in it
    users_python: Path
    env: Path  # the environment's prefix: its share/jupyter and etc/jupyter
    memory: int  # bytes of address space per process
    cpu_seconds: int
    processes: int
    threads: int  # OMP_NUM_THREADS of the kernels
    idle_timeout: int

    @classmethod
    def from_environment(cls, environ) -> Settings:
        def get(name: str, default: str | None = None) -> str:
            value = environ.get(f"ATTNLAB_HUB_{name}", default)
            if value is None:
                raise SetupError(f"ATTNLAB_HUB_{name} is not set: start the hub with serve.sh")
            return value

        env = Path(get("ENV", str(REPO / ".venv")))
        return cls(
            ip=get("IP", "127.0.0.1"),
            port=int(get("PORT", "8000")),
            hub_port=int(get("HUB_PORT", "8081")),
            proxy_api_port=int(get("PROXY_API_PORT", "8001")),
            state=Path(get("STATE")),
            auth=get("AUTH", "native"),
            instructors=tuple(n for n in get("INSTRUCTORS", "instructor").split(",") if n),
            course_id=get("COURSE", "attention"),
            exchange=Path(get("EXCHANGE", "/srv/nbgrader/exchange")),
            homes=Path(get("HOMES", "/home")),
            prefix=get("PREFIX", ""),
            group=get("GROUP", "attnlab"),
            users_python=Path(get("USERS_PYTHON", str(env / "bin" / "python"))),
            env=env,
            memory=_size(get("MEMORY", "6G")),
            cpu_seconds=int(get("CPU_SECONDS", "7200")),
            processes=int(get("PROCESSES", "512")),
            threads=int(get("THREADS", "2")),
            idle_timeout=int(get("IDLE_TIMEOUT", "3600")),
        )


def read_private_json(path: Path) -> dict:
    """A settings file that holds secrets: it must exist and be readable by its owner only."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise SetupError(f"{path} is missing (see README: Running a course server)") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SetupError(f"{path} is readable by others: chmod 600 {path}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise SetupError(f"{path} is not JSON: {err}") from None


def system_name(settings: Settings, hub_name: str) -> str:
    name = settings.prefix + hub_name
    if PLAIN_NAME.fullmatch(hub_name) and len(name) <= MAX_ACCOUNT_NAME:
        return name
    return f"{settings.prefix}u{hashlib.sha256(hub_name.encode()).hexdigest()[:12]}"


def user_environment(settings: Settings) -> dict[str, str]:
    """What every user's server starts with (on top of JupyterHub's own variables)."""
    return {
        "PATH": os.pathsep.join(
            [str(settings.users_python.parent), str(settings.env / "bin"), "/usr/bin", "/bin"]
        ),
        # The environment's Jupyter data and configuration, and this folder's user config
        # (the course's nbgrader settings), whichever Python runs it.
        "JUPYTER_PATH": str(settings.env / "share" / "jupyter"),
        "JUPYTERLAB_DIR": str(settings.env / "share" / "jupyter" / "lab"),
        "JUPYTER_CONFIG_PATH": os.pathsep.join(
            [str(HERE / "user-config"), str(settings.env / "etc" / "jupyter")]
        ),
        "ATTNLAB_COURSE_ID": settings.course_id,
        "ATTNLAB_EXCHANGE": str(settings.exchange),
        "OMP_NUM_THREADS": str(settings.threads),
    }


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    for folder, dirs, files in os.walk(root):
        os.chown(folder, uid, gid)
        for name in dirs + files:
            os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)


class CourseSpawner(LocalProcessSpawner):
    """LocalProcessSpawner under the course's own account names, limits and first-start set-up."""

    course: Settings  # set by jupyterhub_config.py

    @property
    def account(self) -> str:
        return system_name(self.course, self.user.name)

    @property
    def is_instructor(self) -> bool:
        return self.user.name in self.course.instructors

    # -------------------------------------------------------------- the account
    def ensure_account(self) -> pwd.struct_passwd:
        name, settings = self.account, self.course
        try:
            grp.getgrnam(settings.group)
        except KeyError:
            subprocess.run(["groupadd", "--system", settings.group], check=True)
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            home = settings.homes / name
            subprocess.run(
                ["useradd", "--create-home", "--home-dir", str(home), "--gid", settings.group]
                + ["--shell", "/bin/bash", "--comment", f"hub user {self.user.name}", name],
                check=True,
                capture_output=True,
            )
            entry = pwd.getpwnam(name)
            os.chmod(entry.pw_dir, 0o700)
        if entry.pw_gid != grp.getgrnam(settings.group).gr_gid:
            # An account the hub did not create (root, a service): never run a user as it.
            raise SetupError(f"{name} is a system account of this machine, not a course account")
        return entry

    def prepare_home(self, entry: pwd.struct_passwd) -> None:
        home = Path(entry.pw_dir)
        deck = home / "attnlab"
        if not deck.exists():  # the user's own copy is theirs: never replaced
            deck.mkdir()
            for rel in DECK_FILES:
                shutil.copytree(
                    REPO / rel, deck / rel, ignore=shutil.ignore_patterns(".ipynb_checkpoints")
                )
            _chown_tree(deck, entry.pw_uid, entry.pw_gid)
        if self.is_instructor:
            self.prepare_course(entry, home / COURSE_FOLDER)

    def prepare_course(self, entry: pwd.struct_passwd, course: Path) -> None:
        """The course folder with nbgrader's source of the exercises, made by the instructor's
        own account (the tool writes only inside it)."""
        if (course / "source").exists():
            return
        course.mkdir(exist_ok=True)
        os.chown(course, entry.pw_uid, entry.pw_gid)
        subprocess.run(
            [str(self.course.users_python), "-m", "attnlab", "course", "source"]
            + [str(EXERCISES), str(course)],
            cwd=course,
            env={**user_environment(self.course), "HOME": entry.pw_dir},
            preexec_fn=set_user_setuid(entry.pw_name),
            check=True,
            capture_output=True,
            timeout=120,
        )

    async def start(self):
        entry = await asyncio.to_thread(self.ensure_account)
        await asyncio.to_thread(self.prepare_home, entry)
        return await super().start()

    # -------------------------------------------------------------- the process
    def make_preexec_fn(self, name):
        become = set_user_setuid(self.account)
        settings = self.course

        def preexec():
            os.nice(5)
            resource.setrlimit(resource.RLIMIT_AS, (settings.memory, settings.memory))
            resource.setrlimit(resource.RLIMIT_CPU, (settings.cpu_seconds, settings.cpu_seconds))
            # Per user id: set before the uid changes, counted for the new one afterwards.
            resource.setrlimit(resource.RLIMIT_NPROC, (settings.processes, settings.processes))
            become()

        return preexec

    def user_env(self, env):
        entry = pwd.getpwnam(self.account)
        env["USER"] = entry.pw_name
        env["HOME"] = entry.pw_dir
        env["SHELL"] = entry.pw_shell
        env["ATTNLAB_ROLE"] = "instructor" if self.is_instructor else "student"
        return env
