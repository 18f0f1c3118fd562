"""What a user sees while a study measures: which point of how many, and an ETA from the plan.

Lines go to stderr; when SNAPTAX_PROGRESS_FILE is set (by `python -m snaptax notebook`, whose kernel's output
the terminal does not see) they go to that file instead, and the notebook runner prints them.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

PROGRESS_FILE_ENV = "SNAPTAX_PROGRESS_FILE"


def say(line: str) -> None:
    """One status line to the user: to the progress file when a notebook runner listens (the notebook itself
    stays free of progress noise), else to stderr."""
    target = os.environ.get(PROGRESS_FILE_ENV)
    if target:
        try:
            with open(target, "a") as f:
                f.write(line + "\n")
            return
        except OSError:
            pass
    print(line, file=sys.stderr, flush=True)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


class Progress:
    """Counts measurements against the plan. The ETA scales the plan's remaining fio time by how the run has
    kept to the plan so far (snapshot, commit and daemon start-up time are not in the plan's fio time)."""

    def __init__(self, study: str, points: int, planned_seconds: float, quiet: bool = False) -> None:
        self.study, self.points, self.planned, self.quiet = study, points, planned_seconds, quiet
        self.done_points = 0
        self.done_planned = 0.0
        self.t0 = time.monotonic()

    def say(self, line: str) -> None:
        if not self.quiet:
            say(f"[{self.study}] {line}")

    def start(self) -> None:
        self.t0 = time.monotonic()
        if self.points:
            planned = f", plan's fio time {_minutes(self.planned)}" if self.planned > 0 else ""
            self.say(f"measuring {self.points} points{planned}")

    def advance(self, label: str, fio_seconds: float) -> None:
        self.done_points += 1
        # Weigh each point by the plan's fio time; a plan of fixed-size jobs (no planned time) by points alone.
        total = self.planned if self.planned > 0 else float(self.points)
        self.done_planned += total / self.points if self.points else 0.0
        elapsed = time.monotonic() - self.t0
        if self.points:
            pace = elapsed / self.done_planned if self.done_planned else 1.0
            eta = max(0.0, (total - self.done_planned) * pace)
            bar_n = int(20 * min(self.done_points, self.points) / self.points)
            bar = "#" * bar_n + "." * (20 - bar_n)
            self.say(f"[{bar}] {self.done_points}/{self.points} {label} ({fio_seconds:.1f} s), "
                     f"elapsed {_minutes(elapsed)}, ETA {_minutes(eta)}")
        else:
            self.say(f"{self.done_points} {label} ({fio_seconds:.1f} s), elapsed {_minutes(elapsed)}")

    def done(self, published: Path) -> None:
        self.say(f"published {published} after {_minutes(time.monotonic() - self.t0)}")
