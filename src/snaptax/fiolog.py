"""fio's per-second logs through fio's own fiologparser.

Debian's fio package ships `fiologparser.py` only gzipped in its documentation
(/usr/share/doc/fio/fiologparser.py.gz). fio 3.33 writes five columns per log line (time ms, value, direction,
block size, offset) while the script unpacks four (`ValueError: too many values to unpack`), so it is fed the first
four columns (platform notes). Its sum mode (`-s`) prints `end_ms, value` per interval: for an IOPS log with
log_avg_msec=1000 the value is the I/Os completed in that second, apportioned by fiologparser to 1 s intervals.

`per_second(log)` runs the parser on a four-column copy in a temporary directory (the script and that copy are
derived from the package and the log, so a run does not keep them), writes the parser's output next to the log as
`<log>.parsed` (so the run keeps what came out) and returns (end_s, value) rows.
"""
from __future__ import annotations

import gzip
import sys
import tempfile
from pathlib import Path

from . import procs
from .errors import MeasurementError

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


def four_columns(log: Path, out: Path) -> Path:
    """Copy of a fio 3.33 log with only the first four columns (what fiologparser unpacks)."""
    lines = []
    for line in log.read_text().splitlines():
        if line.strip():
            lines.append(", ".join(part.strip() for part in line.split(",")[:4]))
    out.write_text("\n".join(lines) + ("\n" if lines else ""))
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
        four = four_columns(log, Path(tmp) / log.name)
        if not four.read_text().strip():
            log.with_name(log.name + ".parsed").write_text("")
            return []
        cp = procs.run([sys.executable, str(script(Path(tmp))), "-s", "-i", "1000", str(four)], timeout=120,
                       check=False)
    if cp.returncode != 0:
        tail = " | ".join(cp.stderr.decode(errors="replace").strip().splitlines()[-2:])
        raise MeasurementError(f"fiologparser on {log.name} exited {cp.returncode}: {tail}")
    text = cp.stdout.decode()
    log.with_name(log.name + ".parsed").write_text(text)
    return parse_sums(text)


__all__ = ["SCRIPT_GZ", "script", "four_columns", "parse_sums", "per_second"]
