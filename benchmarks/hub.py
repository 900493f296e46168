"""Benchmark: what a student costs a real course hub (deploy/hub), alone and N at once.

It starts the course's JupyterHub with its proxy on 127.0.0.1 (deploy/hub/serve.sh, as the
hub test does: tests/e2e/course_hub.py; a temporary state folder and accounts of its own, all
stopped and removed at the end), signs up N students, and drives each in a Chromium of its
own through the proxy, in three rounds:

1. one student alone: opens the deck in the RISE slideshow and presses "restart and run all";
   then moves the first slider ``--moves`` times (the slider latency through the proxy);
2. all N students press it in the same moment;
3. N-1 students press it again while the first one moves its slider (latency under load).

After rounds 1 and 2, while every kernel is alive, it prints per student the kernel's CPU
seconds (user + system since the restart: its imports and every cell), its resident memory
(rss) and proportional set size (pss: pages shared by k processes count 1/k), and the same for
the student's Jupyter server, measured from /proc as benchmarks/student.py does
(``kernel_usage``; a server's CPU seconds include its kernels that ended, the ones each
restart replaced); the wall seconds of each Run-All; the slider's median and 90th percentile
in ms from the drag's last move to the new picture on screen (tests/e2e/slides.py's
``time_slider``).  Then the capacity these figures give: students per core and per GiB, and
the machine a 150-student lecture needs when everyone presses Run-All in the same minute.

The browsers run on the same machine as the hub (a real class's browsers do not): the
figures of the kernels are theirs alone, but wall times and latencies include the browsers'
share of the CPU.  Figures, no verdict: a timing never fails the run; a failed cell, a page
error or a 5xx does (exit status 1).  Needs root (accounts), Chromium, npm (the proxy).

Run:  sudo .venv/bin/python benchmarks/hub.py [--students N] [--moves M]   (or ``make bench``)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import course_hub  # noqa: E402  (tests/e2e: the hub test's helpers)
import slides  # noqa: E402
from conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from student import Usage, kernel_usage, line  # noqa: E402
from test_slideshow import check_outputs  # noqa: E402

INSTRUCTOR = "teacher"
LECTURE = 150  # students in the lecture the capacity is given for
PHASE_S = 900  # the most a round may take before the benchmark gives up


@dataclass
class Student:
    name: str
    alone: tuple[Usage, Usage] | None = None  # kernel, server after round 1
    together: tuple[Usage, Usage] | None = None  # after round 2
    wall_s: list[float] = field(default_factory=list)  # each Run-All's seconds
    latency_alone: list[float] = field(default_factory=list)
    latency_busy: list[float] = field(default_factory=list)


def usage(hub: course_hub.Hub, name: str) -> tuple[Usage, Usage]:
    """The student's kernel (the one the deck's restart started) and Jupyter server."""
    pids = course_hub.kernels(hub, name)
    if len(pids) != 1:
        raise RuntimeError(f"{name} has {len(pids)} kernels, not the deck's one")
    return kernel_usage(pids[0]), kernel_usage(course_hub.single_user_server(hub, name))


def time_moves(page, moves: int, into: list[float], who: str, errors: list[str]) -> None:
    control = course_hub.first_slider(page)
    if control is None:
        errors.append(f"{who}: no slider in the first 120 steps of the slideshow")
        return
    slides.time_slider(page, control, moves=moves)
    into.extend(control.latencies_ms)
    if control.problem:
        errors.append(f"{who}: slider {control.label!r}: {control.problem}")


class Rounds:
    """What the students' threads share: the barrier between rounds, the errors."""

    def __init__(self, hub: course_hub.Hub, students: list[Student], moves: int):
        self.hub, self.students, self.moves = hub, students, moves
        self.barrier = threading.Barrier(len(students), timeout=PHASE_S)
        self.others_done = threading.Semaphore(0)
        self.errors: list[str] = []
        self.deck = json.loads((ROOT / "notebooks" / "07_attention.ipynb").read_text())

    def run_deck(self, page, student: Student) -> None:
        slides.use_sources(page, self.deck)  # most inputs are hidden on the slides
        saved = course_hub.saved_deck(page, self.hub, student.name)
        seconds, ran = course_hub.run_deck(page, saved)
        student.wall_s.append(seconds)
        self.errors.extend(f"{student.name}: {p}" for p in check_outputs(page, self.deck, ran))

    def drive(self, student: Student) -> None:
        """One student's browser through the three rounds (student 0 is the one timed)."""
        from playwright.sync_api import sync_playwright

        first = student is self.students[0]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                _, page = course_hub.new_page(browser, self.hub, self.errors, student.name)
                course_hub.log_in_and_start(page, self.hub, student.name)
                course_hub.open_deck(page, self.hub, student.name)
                self.barrier.wait()
                if first:  # round 1: alone
                    self.run_deck(page, student)
                    student.alone = usage(self.hub, student.name)
                    time_moves(page, self.moves, student.latency_alone, "alone", self.errors)
                self.barrier.wait()
                self.run_deck(page, student)  # round 2: all at once
                self.barrier.wait()
                student.together = usage(self.hub, student.name)
                self.barrier.wait()
                if first:  # round 3: the slider while the others run
                    self.busy_slider(page, student)
                else:
                    self.run_deck(page, student)
                    self.others_done.release()
                self.barrier.wait()
            except Exception as err:
                self.errors.append(f"{student.name}: {type(err).__name__}: {str(err)[:1500]}")
                self.barrier.abort()  # the others stop waiting for this one
            finally:
                browser.close()

    def busy_slider(self, page, student: Student) -> None:
        """Move the slider in rounds of ``moves`` until every other student's Run-All ended."""
        others = len(self.students) - 1
        done = 0
        while done < others:
            time_moves(page, self.moves, student.latency_busy, "busy", self.errors)
            while done < others and self.others_done.acquire(blocking=False):
                done += 1


def set_up(hub: course_hub.Hub, names: list[str], errors: list[str]) -> None:
    """The instructor signs up (an admin) and authorizes the students; starts no server."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context, page = course_hub.new_page(browser, hub, errors, INSTRUCTOR)
            course_hub.sign_up(page, hub, INSTRUCTOR)
            course_hub.log_in(page, hub, INSTRUCTOR, then="authorize")
            course_hub.authorize(browser, page, hub, names)
            context.close()
        finally:
            browser.close()


def quantiles(ms: list[float]) -> str:
    if not ms:
        return "no move timed"
    p90 = statistics.quantiles(ms, n=10)[8] if len(ms) > 1 else ms[0]
    return f"median {statistics.median(ms):5.0f} ms, p90 {p90:5.0f} ms ({len(ms)} moves)"


def report(students: list[Student]) -> None:
    one = students[0]
    n = len(students)
    print(f"\n1 student alone: Run-All {one.wall_s[0]:.1f} s wall")
    print(line("  kernel", one.alone[0]))
    print(line("  server", one.alone[1]))
    print(
        f"\n{n} students at once: Run-All {min(s.wall_s[1] for s in students):.1f} to "
        f"{max(s.wall_s[1] for s in students):.1f} s wall"
    )
    for s in students:
        print(line(f"  {s.name} kernel", s.together[0]) + f"   Run-All {s.wall_s[1]:.1f} s")
    for s in students:
        print(line(f"  {s.name} server", s.together[1]))
    print("\nslider through the proxy (drag's last move to the new picture on screen):")
    print(f"  alone:                          {quantiles(one.latency_alone)}")
    print(f"  while {n - 1} others run Run-All: {quantiles(one.latency_busy)}")
    capacity(students)


def capacity(students: list[Student]) -> None:
    """Students per core and per GiB from round 2 (the worst student; pss: shared pages
    split between the processes that share them, what each costs the machine)."""
    cpu = max(s.together[0].cpu_s for s in students)
    pss = max(
        (s.together[0].pss_mb or s.together[0].rss_mb)
        + (s.together[1].pss_mb or s.together[1].rss_mb)
        for s in students
    )
    rss = max(s.together[0].rss_mb + s.together[1].rss_mb for s in students)
    print(
        f"\ncapacity (worst of the {len(students)} students: {cpu:.1f} CPU-s per Run-All, "
        f"kernel + server {pss:.0f} MB pss, {rss:.0f} MB rss):"
    )
    anon = max((s.together[0].anon_mb or 0) + (s.together[1].anon_mb or 0) for s in students)
    if anon:
        print(
            f"  one more student adds at least {anon:.0f} MB (its kernel's and server's own pages)"
        )
    print(f"  per core: {60 / cpu:.0f} Run-Alls a minute; per GiB: {1024 / pss:.1f} students")
    cores = LECTURE * cpu / 60
    print(
        f"  {LECTURE} students pressing Run-All in the same minute: {cores:.0f} cores busy "
        f"that minute, {LECTURE * pss / 1024:.0f} GiB for their kernels and servers "
        f"({LECTURE * rss / 1024:.0f} GiB if nothing were shared)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=4, help="students at once (4)")
    parser.add_argument("--moves", type=int, default=10, help="slider moves timed alone (10)")
    args = parser.parse_args(argv)
    if args.students < 2 or args.moves < 2:
        parser.error("--students and --moves must be at least 2")
    if os.geteuid() != 0:
        print("benchmarks/hub.py creates accounts and runs servers under them: run it as root")
        return 2
    print(
        f"hub benchmark: deploy/hub on 127.0.0.1, {args.students} students, "
        f"{os.cpu_count()} CPUs; the browsers share this machine (timings are noisy)"
    )
    root = Path(tempfile.mkdtemp(prefix="attnlab-hub-bench-"))
    hub = course_hub.Hub(root)
    students = [Student(f"s{k}") for k in range(1, args.students + 1)]
    rounds = Rounds(hub, students, args.moves)
    try:
        course_hub.start_hub(hub, [INSTRUCTOR])
        print(f"hub up at {hub.url}", flush=True)
        set_up(hub, [s.name for s in students], rounds.errors)
        threads = [threading.Thread(target=rounds.drive, args=(s,)) for s in students]
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=4 * PHASE_S)
        print(f"all rounds: {time.monotonic() - start:.0f} s", flush=True)
        rounds.errors += hub.errors_in_log()
        if all(s.together for s in students) and students[0].alone:
            report(students)
    finally:
        course_hub.stop_everything(hub)
        shutil.rmtree(root, ignore_errors=True)
    if rounds.errors:
        print(f"\n{len(rounds.errors)} errors:\n" + "\n".join(e[:2000] for e in rounds.errors))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
