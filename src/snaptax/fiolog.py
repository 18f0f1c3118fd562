"""fio's per-second logs through fio's own fiologparser.

Debian's fio package ships `fiologparser.py` only gzipped in its documentation
(/usr/share/doc/fio/fiologparser.py.gz). fio 3.33 writes five columns per log line (time ms, value, direction,
block size, offset) while the script unpacks four (`ValueError: too many values to unpack`), so it is fed the first
four columns (platform notes). Its sum mode (`-s`) prints `end_ms, value` per interval: for an IOPS log with
log_avg_msec=1000 the value is the I/Os completed in that second, apportioned by fiologparser to 1 s intervals.

An IOPS log of a job that reads and writes has one line per direction and interval, with the same timestamp;
fiologparser reads a file as one series and counts only one of two samples that end at the same time, so such a
log is split into one four-column file per direction and the parser sums the files (`-s` sums across series).

`per_second(log)` runs the parser on four-column copies in a temporary directory (the script and that copy are
derived from the package and the log, so a run does not keep them), writes the parser's output next to the log as
`<log>.parsed` (so the run keeps what came out) and returns (end_s, value) rows.

A run of several jobs logged into one file (per_job_logs=0) is first told apart by job (label_jobs), and
`run_seconds(log)` gives its total IOPS in each whole second (full_seconds), leaving nothing beside the log.
"""
from __future__ import annotations

import gzip
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

from .errors import MeasurementError
from .host import procs

SCRIPT_GZ = Path("/usr/share/doc/fio/fiologparser.py.gz")
IOPS_LOG = "fio_iops.log"   # a run's per-second IOPS log (fio.FioJob.job_file: log_avg_msec=1000, per_job_logs=0)
# A window of fiologparser's at least this long is a second of the run. The last window ends at the earliest last
# sample of any job's series, and is shorter when that job's log stopped short of a whole second: fio's samples land
# within a few ms of each whole second (2999, 3001 ms), and a job that stops before its next sample logs no part of
# its last second (a TCG guest's job logged at 1004 and 2005 ms of a 3-s run: a 5-ms third window).
FULL_WINDOW_S = 0.9


def script(directory: Path) -> Path:
    """fiologparser.py unpacked into `directory` (from the Debian fio package's documentation)."""
    if not SCRIPT_GZ.exists():
        raise MeasurementError(f"{SCRIPT_GZ} not found: fio's log parser ships with Debian's fio package "
                               "(apt-get install fio)")
    out = directory / "fiologparser.py"
    if not out.exists():
        out.write_bytes(gzip.decompress(SCRIPT_GZ.read_bytes()))
    return out


def split_directions(log: Path, directory: Path) -> list[Path]:
    """Four-column copies of a fio log, one per data direction (column 3) that occurs in it."""
    by_dir: dict[str, list[str]] = {}
    for line in log.read_text().splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) >= 4 and line.strip():
            by_dir.setdefault(parts[2], []).append(", ".join(parts[:4]))
    out = []
    for ddir, lines in sorted(by_dir.items()):
        path = directory / f"{log.stem}.dir{ddir}{log.suffix}"
        path.write_text("\n".join(lines) + "\n")
        out.append(path)
    return out


def parse_sums(text: str) -> list[tuple[float, float]]:
    """fiologparser -s output ('end_ms, value' per line) → [(end_s, value)]."""
    rows = []
    for line in text.splitlines():
        if "," not in line:
            continue
        end, value = line.split(",", 1)
        rows.append((float(end) / 1000.0, float(value)))
    return rows


def per_second(log: Path) -> list[tuple[float, float]]:
    """Per-second sums of one fio log, computed by fiologparser (-s, 1000 ms intervals). Leaves `<log>.parsed`
    (the parser's output) beside the log."""
    with tempfile.TemporaryDirectory(prefix="snaptax-fiolog-") as tmp:
        series = split_directions(log, Path(tmp))
        if not series:
            log.with_name(log.name + ".parsed").write_text("")
            return []
        cp = procs.run([sys.executable, str(script(Path(tmp))), "-s", "-i", "1000", *map(str, series)], timeout=120,
                       check=False)
    if cp.returncode != 0:
        tail = " | ".join(cp.stderr.decode(errors="replace").strip().splitlines()[-2:])
        raise MeasurementError(f"fiologparser on {log.name} exited {cp.returncode}: {tail}")
    text = cp.stdout.decode()
    log.with_name(log.name + ".parsed").write_text(text)
    return parse_sums(text)


def label_jobs(log: Path, directory: Path) -> Path:
    """A copy of fio's IOPS log of a run of several jobs (per_job_logs=0), written into `directory`, whose direction
    column (the third) names the job as well, 'j<i>d<direction>'. fio writes the jobs' lines one job after another,
    each job's in time order with one line per direction and window, so a job ends where a direction's time no
    longer increases. fiologparser reads a file as one series whose samples run from one line's time to the next's:
    in the log as fio wrote it, each later job's first window would run backwards in time, from the job before's
    last sample, and count for nothing (in a 3-s run of 4 jobs the first second would hold one job's I/Os).
    per_second splits a log into one series per value of that column and fiologparser sums the series, so
    the copy gives one series per job and direction, each in time order, summed."""
    out, job = [], 0
    last: dict[str, float] = {}
    for line in log.read_text().splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) < 4 or not line.strip():
            continue
        t, ddir = float(parts[0]), parts[2]
        if not job or t <= last.get(ddir, -math.inf):
            job, last = job + 1, {}
        last[ddir] = t
        out.append(", ".join([*parts[:2], f"j{job}d{ddir}", *parts[3:]]))
    path = directory / log.name
    path.write_text("\n".join(out) + "\n" if out else "")
    return path


def full_seconds(rows: list[tuple[float, float]]) -> list[float]:
    """The I/Os of each whole second, from fiologparser's sums (per_second: (end_s, value) per window
    ((i − 1) s, end_s], i = 1, 2, …; a value is the I/Os per second in the window, summed over the series; the last
    window ends at the earliest last sample of any series): the values of the windows before the first one shorter
    than FULL_WINDOW_S, a second that some series covers only in part (a job whose log ends before the run's last
    whole second), which is left out."""
    out = []
    for i, (end_s, value) in enumerate(rows):
        if end_s - i < FULL_WINDOW_S:
            break
        out.append(value)
    return out


def run_seconds(log: Path) -> np.ndarray:
    """Total IOPS (reads + writes, all jobs) in each second k = 1..K of one fio run, from its IOPS log: the log
    with its jobs told apart (label_jobs) through per_second, in a temporary directory so that the run's
    directory gains no parser output, cut to whole seconds (full_seconds). K: the whole seconds every job's log
    has. Empty without a log."""
    if not log.exists():
        return np.empty(0)
    with tempfile.TemporaryDirectory(prefix="snaptax-seconds-") as tmp:
        return np.array(full_seconds(per_second(label_jobs(log, Path(tmp)))), dtype=float)


__all__ = ["SCRIPT_GZ", "IOPS_LOG", "FULL_WINDOW_S", "script", "split_directions", "parse_sums", "per_second",
           "label_jobs", "full_seconds", "run_seconds"]
