"""Start the course's JupyterHub (deploy/hub/serve.sh runs this with the repository's .venv).

    deploy/hub/serve.sh [--ip 127.0.0.1] [--port 8000] [--state /var/lib/attnlab-hub] ...

What it does before the hub starts, so that a bad setting is one line here and not a traceback
from inside the hub:

* the state folder (mode 0700): the hub's database, and two secrets generated with
  ``secrets`` on the first start, each in a file of mode 0600 (``cookie_secret``,
  ``proxy_token``); a secret file that others can read stops the start;
* ``lti13.json`` (mode 0600) is read only with ``--auth lti13``;
* the nbgrader exchange (mode 1777, as nbgrader's docs say) and the homes folder;
* configurable-http-proxy: ``npm ci`` in deploy/hub when it is missing;
* the users' Python must run as an unprivileged account (it is refused if it lives in a folder
  they cannot read, e.g. a Python built under /root);
* then it becomes ``jupyterhub -f deploy/hub/jupyterhub_config.py`` (exec: the same process),
  with the settings in ATTNLAB_HUB_* and the proxy's token in CONFIGPROXY_AUTH_TOKEN: the
  environment, never a command line, which every local user can read.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CONFIG = HERE / "jupyterhub_config.py"
PROXY = HERE / "node_modules" / ".bin" / "configurable-http-proxy"
NOBODY = 65534
SECRETS = ("cookie_secret", "proxy_token")


def fail(message: str) -> SystemExit:
    return SystemExit(f"serve: {message}")


def _ip(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an IP address: {text[:40]!r}") from None


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 1 to 65535; got {text[:20]!r}")
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number of at least 1; got {text[:20]!r}")
    return int(text)


def _name(text: str) -> str:
    if not text or not all(ch.isalnum() or ch in "_-" for ch in text) or not text[0].isalpha():
        raise argparse.ArgumentTypeError(f"letters, digits, - and _ only; got {text[:40]!r}")
    return text


def _names(text: str) -> str:
    return ",".join(_name(name.strip()) for name in text.split(","))


def _memory(text: str) -> str:
    number, unit = text[:-1], text[-1:].upper()
    if unit not in "KMG" or not number.isdigit():
        raise argparse.ArgumentTypeError(f"a size such as 6G or 4096M; got {text[:20]!r}")
    return text


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="deploy/hub/serve.sh", description=__doc__.split("\n")[0])
    a = p.add_argument
    a("--ip", type=_ip, default="127.0.0.1", help="where the hub listens (127.0.0.1)")
    a("--port", type=_port, default=8000, help="its port (8000)")
    a("--hub-port", type=_port, default=8081, help="the hub's API, on 127.0.0.1 (8081)")
    a("--proxy-api-port", type=_port, default=8001, help="the proxy's API, 127.0.0.1 (8001)")
    a("--state", type=Path, default=Path("/var/lib/attnlab-hub"), help="database and secrets")
    a("--auth", choices=["native", "lti13"], default="native", help="accounts (native)")
    a("--instructors", type=_names, default="instructor", help="hub names, comma-separated")
    a("--course", type=_name, default="attention", help="nbgrader course id (attention)")
    a("--exchange", type=Path, default=Path("/srv/nbgrader/exchange"), help="nbgrader exchange")
    a("--homes", type=Path, default=Path("/home"), help="where accounts' homes go (/home)")
    a("--prefix", default="", type=lambda t: t and _name(t), help="system account name prefix")
    a("--group", type=_name, default="attnlab", help="the group of the accounts (attnlab)")
    a("--users-python", type=Path, help="the Python users' servers run (.venv/bin/python)")
    a("--memory", type=_memory, default="6G", help="address space per process (6G)")
    a("--cpu-seconds", type=_positive, default=7200, help="CPU seconds per process (7200)")
    a("--processes", type=_positive, default=512, help="processes+threads per user (512)")
    a("--threads", type=_positive, default=2, help="OMP_NUM_THREADS of kernels (2)")
    a("--idle-timeout", type=_positive, default=3600, help="cull servers idle this long (s)")
    return p.parse_args(argv)


def private_folder(path: Path) -> Path:
    path = path.resolve()
    if REPO in path.parents or path == REPO:
        raise fail(f"the state folder {path} is inside the repository: give one outside it")
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise fail(f"the state folder {path} is open to others: chmod 700 {path}")
    return path


def secret(state: Path, name: str) -> str:
    """The secret in ``state/name``: generated once (mode 0600), then read; never printed."""
    path = state / name
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise fail(f"{path} is readable by others: chmod 600 {path}") from None
        value = path.read_text(encoding="ascii").strip()
        if len(value) < 32:
            raise fail(f"{path} holds no secret: remove it and start again") from None
        return value
    value = secrets.token_hex(32)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(value + "\n")
    return value


def shared_folder(path: Path, mode: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, mode)


def ensure_proxy() -> None:
    if PROXY.exists():
        return
    npm = ["npm", "ci", "--no-audit", "--no-fund", "--omit=dev"]
    try:
        subprocess.run(npm, cwd=HERE, check=True)
    except (OSError, subprocess.CalledProcessError):
        raise fail("npm ci in deploy/hub failed: install Debian's nodejs and npm") from None


def check_users_python(python: Path) -> None:
    """The users run it unprivileged: check that one can (and that it has the course's parts)."""
    probe = [str(python), "-c", "import attnlab, jupyterhub, nbgrader, jupyterlab"]

    def become_nobody():
        os.setgid(NOBODY)
        os.setgroups([])
        os.setuid(NOBODY)

    try:
        done = subprocess.run(
            probe, preexec_fn=become_nobody, capture_output=True, cwd="/", timeout=120
        )
    except OSError as err:
        raise fail(f"the users cannot run {python}: {err.strerror}") from None
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        raise fail(
            f"the users cannot run {python} ({last}): build the environment where every "
            "account can read it (make setup with Debian's python3.11), or pass --users-python"
        )


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if os.geteuid() != 0:
        raise fail("run it as root: each user's server runs under an account of its own")
    state = private_folder(args.state)
    token = {name: secret(state, name) for name in SECRETS}["proxy_token"]
    if args.auth == "lti13":
        sys.path.insert(0, str(HERE))
        import hubusers

        try:
            hubusers.read_private_json(state / "lti13.json")
        except hubusers.SetupError as err:
            raise fail(str(err)) from None
    shared_folder(args.exchange, 0o1777)
    args.homes.mkdir(parents=True, exist_ok=True)
    ensure_proxy()
    users_python = args.users_python or REPO / ".venv" / "bin" / "python"
    check_users_python(users_python)
    settings = {
        "IP": args.ip,
        "PORT": args.port,
        "HUB_PORT": args.hub_port,
        "PROXY_API_PORT": args.proxy_api_port,
        "STATE": state,
        "AUTH": args.auth,
        "INSTRUCTORS": args.instructors,
        "COURSE": args.course,
        "EXCHANGE": args.exchange.resolve(),
        "HOMES": args.homes.resolve(),
        "PREFIX": args.prefix,
        "GROUP": args.group,
        "USERS_PYTHON": users_python,
        "ENV": Path(sys.prefix),
        "MEMORY": args.memory,
        "CPU_SECONDS": args.cpu_seconds,
        "PROCESSES": args.processes,
        "THREADS": args.threads,
        "IDLE_TIMEOUT": args.idle_timeout,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTNLAB_", "CONFIGPROXY_"))}
    env.update({f"ATTNLAB_HUB_{k}": str(v) for k, v in settings.items()})
    env["CONFIGPROXY_AUTH_TOKEN"] = token
    os.chdir(state)
    hub = [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)]
    os.execve(sys.executable, hub, env)
    return 0  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
