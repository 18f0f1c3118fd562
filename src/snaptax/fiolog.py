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
"""
from __future__ import annotations

import gzip
import sys
import tempfile
from pathlib import Path

from .errors import MeasurementError
from .host import procs

SCRIPT_GZ = Path("/usr/share/doc/fio/fiologparser.py.gz")


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


__all__ = ["SCRIPT_GZ", "script", "split_directions", "parse_sums", "per_second"]
