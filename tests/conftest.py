"""Shared test settings: one torch thread, the hypothesis profiles, and a fork server.

``ci`` (the default) keeps the property tests well under a minute on two cores;
``HYPOTHESIS_PROFILE=dev`` runs many more examples when hunting for a bug.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile

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
    """``python -m attnlab COMMAND ...`` run in this process (the same ``main``, without paying a
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


# --------------------------------------------------------------------------- fresh processes
# The server's own code, run by ``python -c``.  It imports the prelude once, then forks one
# child per case: the child runs the case on a copy of that state, in a process of its own,
# and is gone after it, as a fresh interpreter would be; the server itself never runs a case.
_FORK_SERVER = r"""
import atexit, builtins, json, os, signal, sys, tempfile, time, traceback, types

def _exit_status(code):
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)  # what the interpreter does with sys.exit("text")
    return 1

def _run(code, namespace):
    try:
        exec(compile(code, "<string>", "exec"), namespace)
        return 0
    except SystemExit as stop:
        return _exit_status(stop.code)
    except BaseException:
        traceback.print_exc()
        return 1

def _child(code, namespace, out, err, private):
    status = 1
    try:  # whatever happens, the child never returns into the server's loop
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        for fd in private:
            os.close(fd)
        status = _run(code, namespace)
        atexit._run_exitfuncs()  # as an interpreter does on its way out
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)

def _wait(pid, timeout):
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), False
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), True
        time.sleep(0.005)

def _case(request, namespace, private):
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request["code"], namespace, out, err, private)
        status, timed_out = _wait(pid, request["timeout"])
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode("utf-8", "replace"))
    return {"returncode": status, "stdout": texts[0], "stderr": texts[1], "timed_out": timed_out}

def _serve(prelude):
    requests, replies = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    sys.argv = ["-c"]
    main = types.ModuleType("__main__")  # the cases' globals: the prelude's, and no server's
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    exec(compile(prelude, "<string>", "exec"), main.__dict__)
    replies.write("ready\n")
    replies.flush()
    private = (requests.fileno(), replies.fileno(), null)
    for line in requests:
        result = _case(json.loads(line), main.__dict__, private)
        replies.write(json.dumps(result) + "\n")
        replies.flush()

_serve(sys.argv[1])
"""


class ForkServer:
    """Run code in a fresh process without paying the prelude's imports each time.

    ``python -c PRELUDE + code`` costs a new interpreter and its imports (about 2 s of torch
    and attnlab); here one server imports the prelude once and forks a child per :meth:`run`,
    which runs the code on a copy of the server's state and ends.  A patched module, a cached
    value or an escaped ``SystemExit`` stays in that child.  :meth:`run` answers like
    ``subprocess.run(..., capture_output=True, text=True, timeout=...)``.
    """

    def __init__(self, prelude: str, env: dict[str, str], cwd) -> None:
        self._errors = tempfile.TemporaryFile()  # the server's own stderr, if it breaks
        self._process = subprocess.Popen(
            [sys.executable, "-c", _FORK_SERVER, prelude],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            text=True,
            env=env,
            cwd=cwd,
        )
        self._answer("ready")

    def _answer(self, expected: str | None = None) -> str:
        line = self._process.stdout.readline()
        if not line or (expected and line.strip() != expected):
            self._errors.seek(0)
            errors = self._errors.read().decode("utf-8", "replace")
            raise RuntimeError(f"the fork server stopped:\n{errors[-3000:]}")
        return line

    def run(self, code: str, timeout: float) -> subprocess.CompletedProcess:
        self._process.stdin.write(json.dumps({"code": code, "timeout": timeout}) + "\n")
        self._process.stdin.flush()
        done = json.loads(self._answer())
        if done["timed_out"]:
            raise subprocess.TimeoutExpired("fork", timeout, done["stdout"], done["stderr"])
        return subprocess.CompletedProcess(
            "fork", *(done[k] for k in ("returncode", "stdout", "stderr"))
        )

    def close(self) -> None:
        self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process.stdout.close()
        self._errors.close()

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
