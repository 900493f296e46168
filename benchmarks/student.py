"""Benchmark: what one student's Run-All of the deck costs the machine: CPU seconds and memory.

Each student is a fresh kernel that runs every cell of notebooks/07_attention.ipynb, top to
bottom (nbclient), with OMP_NUM_THREADS as a student's kernel has it (the environment's, else
2: what ``make slides`` exports and the hub's user pods set, deploy/z2jh/values.yaml).  After the last cell, while every kernel is still alive, it
prints per kernel

    cpu:     user + system seconds of the kernel process since it started, its waited-for
             children included (/proc/<pid>/stat: utime, stime, cutime, cstime),
    rss:     resident memory (VmRSS, /proc/<pid>/status),
    pss:     proportional set size (/proc/<pid>/smaps_rollup): a page shared by k kernels
             (a memory-mapped checkpoint, the libraries' code) counts 1/k in each, so the
             sum of the kernels' pss is what they cost the machine together,
    anon:    its anonymous pages (smaps_rollup's Anonymous: heap, tensors, Python objects),
             shared with no other kernel: what one more student costs at least,

and with ``--students N`` the N kernels run at once and the total is printed too.  Targets:
a Run-All <= 8 CPU-s and <= 300 MB, the worst kernel's (printed as met / NOT met, for rss, pss
and anon; a figure never fails the run, a cell that fails does).  Last, a fresh kernel runs only
the deck's import cell: its rss is the floor under any Run-All (``import torch`` alone holds
about 250 MB resident), so the rss target cannot be met by a kernel that imports torch;
pss, what a kernel costs the machine once several share the libraries' pages, can.  The deck runs in a temporary copy of notebooks/ and pics/, so nothing in the
repository changes.

The measurement is :func:`kernel_usage` (a kernel's pid in, a :class:`Usage` out): any test
that has a kernel's pid (a kernel a JupyterHub started, say) measures it the same way.

Run:  .venv/bin/python benchmarks/student.py [--students N]   (or ``make bench``)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
DECK = Path("notebooks/07_attention.ipynb")
CPU_TARGET_S, RSS_TARGET_MB = 8.0, 300.0
DEFAULT_THREADS = "2"  # the Makefile's and the hub's: two cores


@dataclass(frozen=True)
class Usage:
    """What a process has cost so far: CPU seconds (its waited-for children included), MB."""

    user_s: float
    system_s: float
    rss_mb: float
    pss_mb: float | None  # None where the kernel has no smaps_rollup (before Linux 4.14)
    anon_mb: float | None = None  # its anonymous pages: its own, shared with no other kernel

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.system_s


def kernel_usage(pid: int) -> Usage:
    """CPU seconds and resident memory of the live process ``pid``, read from /proc."""
    proc = Path("/proc") / str(pid)
    stat = (proc / "stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": field 3 onwards
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])  # fields 14..17
    tick = os.sysconf("SC_CLK_TCK")
    rss_kb = _kb_field(proc / "status", "VmRSS")
    try:
        pss_kb = _kb_field(proc / "smaps_rollup", "Pss")
        anon_kb = _kb_field(proc / "smaps_rollup", "Anonymous")
    except (OSError, KeyError):
        pss_kb = anon_kb = None
    return Usage(
        user_s=(utime + cutime) / tick,
        system_s=(stime + cstime) / tick,
        rss_mb=rss_kb / 1024,
        pss_mb=None if pss_kb is None else pss_kb / 1024,
        anon_mb=None if anon_kb is None else anon_kb / 1024,
    )


def _kb_field(path: Path, name: str) -> int:
    """The kB value of the line ``name:`` of a /proc file."""
    for line in path.read_text().splitlines():
        key, _, value = line.partition(":")
        if key == name:
            return int(value.split()[0])
    raise KeyError(f"{name} not in {path}")


def kernel_pid(client: NotebookClient) -> int:
    """The pid of the kernel process an nbclient client started."""
    km = client.km
    process = getattr(getattr(km, "provisioner", None), "process", None)
    if process is None:  # jupyter_client < 7
        process = km.kernel
    return int(process.pid)


def deck_client(nb, path: Path) -> NotebookClient:
    """A client that runs ``nb`` (read from ``path``) in a fresh python3 kernel, in its folder."""
    return NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )


async def run_student(path: Path, everyone_done: asyncio.Barrier, measured: asyncio.Barrier):
    """A fresh kernel runs every cell; measured once every student's Run-All is done."""
    nb = nbformat.read(path, as_version=4)
    client = deck_client(nb, path)
    client.reset_execution_trackers()
    async with client.async_setup_kernel():
        pid = kernel_pid(client)
        try:
            await client.async_wait_for_reply(client.kc.kernel_info())
            for index, cell in enumerate(nb.cells):
                await client.async_execute_cell(cell, index)
            failure = None
        except CellExecutionError as err:
            failure = re.sub(r"\x1b\[[0-9;]*m", "", str(err))[-3000:]  # no terminal colours
        await everyone_done.wait()  # shared pages are shared only while the others live
        usage = kernel_usage(pid)
        await measured.wait()
    return pid, usage, failure


async def import_floor(path: Path) -> Usage:
    """A fresh kernel that runs only the deck's first code cell (its imports: torch,
    matplotlib, the widgets): the least a kernel of this deck can hold, whatever it runs."""
    nb = nbformat.read(path, as_version=4)
    nb.cells = [next(c for c in nb.cells if c.cell_type == "code")]
    client = deck_client(nb, path)
    async with client.async_setup_kernel():
        await client.async_wait_for_reply(client.kc.kernel_info())
        await client.async_execute_cell(nb.cells[0], 0)
        return kernel_usage(kernel_pid(client))


async def run_students(work: Path, deck: Path, students: int):
    done, measured = asyncio.Barrier(students), asyncio.Barrier(students)
    path = work / deck
    return await asyncio.gather(*(run_student(path, done, measured) for _ in range(students)))


def verdict(value: float, target: float, unit: str) -> str:
    return "met" if value <= target else f"NOT met (over by {value - target:.1f} {unit})"


def line(label: str, u: Usage) -> str:
    pss = "   n/a" if u.pss_mb is None else f"{u.pss_mb:6.0f}"
    anon = "   n/a" if u.anon_mb is None else f"{u.anon_mb:6.0f}"
    return (
        f"{label:<12} cpu {u.cpu_s:6.1f} s (user {u.user_s:5.1f}, system {u.system_s:4.1f})   "
        f"rss {u.rss_mb:6.0f} MB   pss {pss} MB   anon {anon} MB"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=1, help="kernels running at once")
    parser.add_argument("--notebook", type=Path, default=DECK, help="relative to the repo root")
    args = parser.parse_args(argv)
    if args.students < 1:
        parser.error("--students must be at least 1")
    os.environ.setdefault("OMP_NUM_THREADS", DEFAULT_THREADS)
    os.environ.pop("MPLBACKEND", None)  # a kernel keeps ipykernel's inline backend
    print(
        f"deck: {args.notebook}; {args.students} student(s) at once; "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; {os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory(prefix="attnlab-student-") as tmp:
        work = Path(tmp)
        for rel in ("notebooks", "pics", args.notebook.parent):
            if (ROOT / rel).exists() and not (work / rel).exists():
                shutil.copytree(ROOT / rel, work / rel)
        results = asyncio.run(run_students(work, args.notebook, args.students))
        floor = asyncio.run(import_floor(work / args.notebook))

    status = 0
    for k, (pid, usage, failure) in enumerate(results, start=1):
        print(line(f"student {k}", usage) + f"   (kernel pid {pid})")
        if failure:
            print(f"  the deck failed to run in this kernel:\n{failure}")
            status = 1
    worst_cpu = max(u.cpu_s for _, u, _ in results)
    worst_rss = max(u.rss_mb for _, u, _ in results)
    pss = [u.pss_mb for _, u, _ in results if u.pss_mb is not None]
    if args.students > 1:
        total = Usage(
            user_s=sum(u.user_s for _, u, _ in results),
            system_s=sum(u.system_s for _, u, _ in results),
            rss_mb=sum(u.rss_mb for _, u, _ in results),
            pss_mb=None
            if any(u.pss_mb is None for _, u, _ in results)
            else sum(u.pss_mb for _, u, _ in results),
            anon_mb=None
            if any(u.anon_mb is None for _, u, _ in results)
            else sum(u.anon_mb for _, u, _ in results),
        )
        print(line("total", total) + "   (the machine's cost: the sum of pss)")
    print(line("imports only", floor) + "   (a fresh kernel that ran only the deck's import cell)")
    print(
        f"a student's Run-All: cpu {worst_cpu:.1f} s, target <= {CPU_TARGET_S:.0f} s: "
        f"{verdict(worst_cpu, CPU_TARGET_S, 's')}; rss {worst_rss:.0f} MB, target <= "
        f"{RSS_TARGET_MB:.0f} MB: {verdict(worst_rss, RSS_TARGET_MB, 'MB')}"
        + (f" (pss {max(pss):.0f} MB: {verdict(max(pss), RSS_TARGET_MB, 'MB')})" if pss else "")
    )
    anon = [u.anon_mb for _, u, _ in results if u.anon_mb is not None]
    if anon:
        print(
            f"a kernel's own memory (anon, what one more student adds): {max(anon):.0f} MB, "
            f"target <= {RSS_TARGET_MB:.0f} MB: {verdict(max(anon), RSS_TARGET_MB, 'MB')} (the "
            f"libraries' {worst_rss - max(anon):.0f} MB of file pages are shared by every "
            f"kernel; the imports alone hold {floor.rss_mb:.0f} MB rss, the floor under rss)"
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
