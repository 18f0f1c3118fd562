"""fio jobs from typed parameters, fio runs, and fio JSON turned into tidy rows.

fio is always run directly (no wrapper benchmark); the job file written next to the results is the exact
input fio read.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .errors import ConfigError, MeasurementError

if TYPE_CHECKING:
    from .host.procs import CpuTimes

RW = Literal["read", "write", "randread", "randwrite", "rw", "readwrite", "randrw"]
_RW_VALUES = ("read", "write", "randread", "randwrite", "rw", "readwrite", "randrw")
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

# The files of one fio run in its directory, however fio is run (run() here, snaptax.timeline, the LVM thin script):
# the run records and their readers find them under these names.
JOB_FILE = "job.fio"       # the exact job fio read
JSON_FILE = "fio.json"     # fio's --output-format=json


def parse_size(text: str | int, *, source: str = "size", field_name: str = "size") -> int:
    """'4K', '50G', '512KiB' or an int -> bytes (binary units, as fio reads them)."""
    if isinstance(text, int):
        return text
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ConfigError(source, field_name, f"not a size: {text!r} (use e.g. 4K, 512M, 50G)")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def format_size(n: int) -> str:
    """Bytes -> the shortest exact fio size string ('4K', '50G')."""
    for unit in ("T", "G", "M", "K"):
        if n % _UNITS[unit] == 0 and n >= _UNITS[unit]:
            return f"{n // _UNITS[unit]}{unit}"
    return str(n)


@dataclass(frozen=True)
class FioTarget:
    """Where fio sends I/O: an NBD URI (ioengine=nbd) or a file/block device (libaio/io_uring)."""

    ioengine: Literal["nbd", "libaio", "io_uring"]
    uri: str | None = None
    filename: str | None = None
    # nbd only: let libnbd negotiate structured replies (its default). Off for every measurement: QEMU's server
    # then looks a read's L2 entry up a second time for the reply's block status, which a VM's disk never asks
    # (snaptax.nbdclient); on only to show that artefact.
    structured_replies: bool = False

    def environment(self) -> dict[str, str]:
        """What fio's environment needs beyond the caller's for this target."""
        if self.ioengine == "nbd" and not self.structured_replies:
            from .nbdclient import simple_replies_environment
            return simple_replies_environment()
        return {}

    def comments(self) -> list[str]:
        """Job-file comments recording what the options cannot (the NBD client's reply mode)."""
        if self.ioengine != "nbd":
            return []
        mode = "structured (libnbd's default)" if self.structured_replies else \
            "simple (snaptax.nbdclient preloaded: no block-status lookup per read)"
        return [f"# nbd replies: {mode}"]

    def options(self) -> dict[str, str]:
        if self.ioengine == "nbd":
            if not self.uri:
                raise ConfigError("fio target", "uri", "the nbd ioengine needs a URI")
            return {"ioengine": "nbd", "uri": self.uri}
        if not self.filename:
            raise ConfigError("fio target", "filename", f"ioengine={self.ioengine} needs a filename")
        return {"ioengine": self.ioengine, "filename": self.filename}


@dataclass(frozen=True)
class FioJob:
    """One fio workload. Field names are fio's own option names where they exist.

    `offset`/`size` select the span (fio's nbd engine ignores `filename`). Logs: per-second IOPS and
    completion-latency logs averaged over `log_avg_msec` (≥ 1000 ms: shorter windows give repeated
    timestamps in fio 3.33). `randseed` unset with `randrepeat`: fio's fixed default seed, so every run of the
    same job draws the same offsets in the same order; a job that stands for a later stretch of one continuous
    load gives each stretch its own seed.
    """

    name: str
    rw: RW
    bs: int = 4096
    iodepth: int = 1
    numjobs: int = 1
    direct: bool = True
    size: int = 1 << 30
    offset: int = 0
    runtime_s: float | None = None
    ramp_time_s: float = 0
    time_based: bool = True
    randrepeat: bool = True
    randseed: int | None = None
    rwmixread: int | None = None
    percentage_random: int | None = None
    group_reporting: bool = True
    log_avg_msec: int | None = 1000
    verify: str | None = None
    extra: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        src = f"fio job {self.name!r}"
        if self.rw not in _RW_VALUES:
            raise ConfigError(src, "rw", f"{self.rw!r} is not one of {', '.join(_RW_VALUES)}")
        for name in ("bs", "iodepth", "numjobs", "size"):
            if getattr(self, name) <= 0:
                raise ConfigError(src, name, "must be positive")
        if self.randseed is not None and not 0 <= self.randseed < 2 ** 64:
            raise ConfigError(src, "randseed", "must be an unsigned 64-bit integer")
        if self.time_based and not self.runtime_s:
            raise ConfigError(src, "runtime_s", "time_based jobs need a runtime")
        if self.log_avg_msec is not None and self.log_avg_msec < 1000:
            raise ConfigError(src, "log_avg_msec", "below 1000 ms fio 3.33 logs repeat timestamps")

    def options(self) -> list[tuple[str, str]]:
        """fio options in a stable order (the order of the seed studies' command lines)."""
        opts: list[tuple[str, str]] = [("iodepth", str(self.iodepth)), ("rw", self.rw)]
        if self.rwmixread is not None:
            opts.append(("rwmixread", str(self.rwmixread)))
        if self.percentage_random is not None:
            opts.append(("percentage_random", str(self.percentage_random)))
        opts += [("bs", str(self.bs)), ("direct", "1" if self.direct else "0"),
                 ("numjobs", str(self.numjobs))]
        if self.group_reporting:
            opts.append(("group_reporting", "1"))
        opts.append(("size", format_size(self.size)))
        if self.offset:
            opts.append(("offset", format_size(self.offset)))
        if self.time_based:
            opts.append(("time_based", "1"))
        if self.runtime_s:
            opts.append(("runtime", _seconds(self.runtime_s)))
        if self.ramp_time_s:
            opts.append(("ramp_time", _seconds(self.ramp_time_s)))
        opts.append(("randrepeat", "1" if self.randrepeat else "0"))
        if self.randseed is not None:
            opts.append(("randseed", str(self.randseed)))
        if self.verify:
            opts += [("verify", self.verify), ("do_verify", "1")]
        opts += list(self.extra)
        if any(k == "verify" or k.startswith("verify_") for k, _ in opts) and \
                not any(k == "verify_state_save" for k, _ in opts):
            # fio would otherwise save its verify state as <engine>-<job>-<n>-verify.state in its working
            # directory (a checkout, if a caller runs fio from there); nothing here reloads that state.
            opts.append(("verify_state_save", "0"))
        return opts

    def job_file(self, target: FioTarget, log_prefix: str | None = None) -> str:
        """The fio job file text: [global] carries the target, the job section carries the workload."""
        lines = ["# written by snaptax; fio reads exactly this file", *target.comments(), "[global]"]
        lines += [f"{k}={v}" for k, v in target.options().items()]
        if log_prefix and self.log_avg_msec:
            lines += [f"write_iops_log={log_prefix}", f"write_lat_log={log_prefix}",
                      f"log_avg_msec={self.log_avg_msec}", "per_job_logs=0"]
        lines.append(f"[{self.name}]")
        lines += [f"{k}={v}" for k, v in self.options()]
        return "\n".join(lines) + "\n"

    def replace(self, **changes) -> FioJob:
        return dataclasses.replace(self, **changes)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{int(value * 1000)}ms"


def seed001_job(kind: Literal["randrw", "readwrite"], *, size: int, runtime_s: float,
                ramp_time_s: float = 0, name: str | None = None) -> FioJob:
    """Seed 001's fio jobs (Setty & Nag 2021, 'FIO workload'):

    -ioengine=libaio -iodepth=32 -rw=randrw|readwrite -bs=4096 -direct=1 -numjobs=4 -group_reporting=1
    -size=50G -time_based -runtime=300 -randrepeat=1
    """
    return FioJob(name=name or kind, rw=kind, bs=4096, iodepth=32, numjobs=4, direct=True, size=size,
                  runtime_s=runtime_s, ramp_time_s=ramp_time_s, time_based=True, randrepeat=True,
                  group_reporting=True)


def seed001_read_job(*, size: int, runtime_s: float, ramp_time_s: float = 0, name: str = "randread") -> FioJob:
    """Seed 001's random job with reads only: its randrw job (seed001_job) with rw=randread, everything else the
    same (4 KiB, iodepth 32 × 4 jobs, direct, time-based, randrepeat). Not one of the seed's jobs: a probe of its
    read half (what a guest read costs without the writes beside it)."""
    return seed001_job("randrw", size=size, runtime_s=runtime_s, ramp_time_s=ramp_time_s).replace(name=name,
                                                                                                   rw="randread")


def strided_write_job(size: int, stride: int, *, bs: int = 4096, name: str = "strided") -> FioJob:
    """One write of `bs` bytes at the start of every `stride` bytes of [0, size): ceil(size / stride) fio jobs
    (numjobs) of one write each, job j at offset j·stride (fio's offset_increment). Not time-based. E.g. one write per
    qcow2 L2 table (stride: the guest bytes one table maps), so that a fresh overlay allocates all its tables while
    nearly all of its data stays in the layer below."""
    if stride < bs or size < bs:
        raise ConfigError(f"fio job {name!r}", "stride", f"{stride} B strides of {bs} B writes over {size} B")
    return FioJob(name, "write", bs=bs, iodepth=1, numjobs=-(-size // stride), size=bs, time_based=False,
                  runtime_s=None, log_avg_msec=None, extra=(("offset_increment", format_size(stride)),))


def seed001_mirror_job(*, size: int, runtime_s: float, ramp_time_s: float = 0, name: str = "mirror") -> FioJob:
    """Seed 001's job for its create-then-delete experiment (figures 5 and 6, 'Impact of snapshot removal'):

    -ioengine=libaio -iodepth=32 -rw=randrw --percentage_random=50,50 --bs=16384 -direct=1 -numjobs=4
    -group_reporting=1 -size=50G -time_based -runtime=300 -randrepeat=1
    """
    return FioJob(name=name, rw="randrw", bs=16 << 10, iodepth=32, numjobs=4, direct=True, size=size,
                  runtime_s=runtime_s, ramp_time_s=ramp_time_s, time_based=True, randrepeat=True,
                  percentage_random=50, group_reporting=True)


def prefill_job(disk_size: int, name: str = "prefill") -> FioJob:
    """Write the whole disk once, sequentially, so reads hit real data (IOmeter's test file)."""
    return FioJob(name, "write", bs=1 << 20, iodepth=8, numjobs=1, size=disk_size, time_based=False,
                  runtime_s=None, log_avg_msec=1000)


# ---------------------------------------------------------------- parsing

def load_json(text: str) -> dict:
    """fio JSON output; fio may print notes before the JSON object, which are skipped."""
    start = text.find("{")
    if start < 0:
        raise MeasurementError("fio wrote no JSON output")
    try:
        return json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise MeasurementError(f"fio JSON unreadable: {exc}") from exc


def read_result(directory: Path, label: str) -> dict:
    """The JSON fio wrote in `directory`. MeasurementError when it is unreadable or any job reported I/O errors
    (`label` says which fio run in that message)."""
    result = load_json((directory / JSON_FILE).read_text())
    bad = [j.get("jobname") for j in result.get("jobs", []) if j.get("error")]
    if bad:
        raise MeasurementError(f"fio job(s) {bad} reported I/O errors in {label}")
    return result


def tidy_rows(result: dict) -> list[dict]:
    """One row per fio job (group) and direction: iops, bandwidth, latency in microseconds.

    Units: iops in I/O per second, bw_kib in KiB/s, latencies in µs (fio reports ns).
    """
    rows = []
    for job in result.get("jobs", []):
        for direction in ("read", "write"):
            d = job.get(direction) or {}
            if not d.get("total_ios"):
                continue
            clat = d.get("clat_ns", {})
            pct = clat.get("percentile", {}) or {}
            rows.append({
                "job": job.get("jobname"),
                "direction": direction,
                "iops": float(d.get("iops", 0.0)),
                "bw_kib": float(d.get("bw", 0.0)),
                "ios": int(d.get("total_ios", 0)),
                "runtime_ms": int(d.get("runtime", 0)),
                "clat_mean_us": float(clat.get("mean", 0.0)) / 1e3,
                "clat_p50_us": float(pct.get("50.000000", 0.0)) / 1e3,
                "clat_p99_us": float(pct.get("99.000000", 0.0)) / 1e3,
                "lat_mean_us": float(d.get("lat_ns", {}).get("mean", 0.0)) / 1e3,
                "errors": int(job.get("error", 0)),
            })
    return rows


def total_iops(result: dict) -> float:
    """Read + write IOPS of all jobs (with group_reporting: the one group)."""
    return sum(r["iops"] for r in tidy_rows(result))


# ---------------------------------------------------------------- running

@dataclass(frozen=True)
class FioRun:
    """What one fio invocation left in its directory."""

    directory: Path
    result: dict
    wall_s: float
    # the machine's CPU times just before and after fio ran (None where not sampled: LVM thin's runs in the guest,
    # whose plan runs in one guest session, and tests)
    cpu_before: CpuTimes | None = None
    cpu_after: CpuTimes | None = None

    @property
    def job_file(self) -> Path:
        return self.directory / JOB_FILE

    @property
    def json_file(self) -> Path:
        return self.directory / JSON_FILE


def run(job: FioJob, target: FioTarget, directory: Path, *, timeout_margin_s: float = 120) -> FioRun:
    """Run fio on `job` against `target`, leaving job.fio, fio.json and fio_{iops,clat,lat,slat}.log in
    `directory`. Holds the machine-wide measurement lock. Raises MeasurementError if fio reports errors."""
    import time

    from .host import procs
    from .lock import measurement_lock

    directory.mkdir(parents=True, exist_ok=True)
    (directory / JOB_FILE).write_text(job.job_file(target, log_prefix="fio"))
    timeout = (job.runtime_s or 600) + job.ramp_time_s + timeout_margin_s
    with measurement_lock():
        cpu_before = procs.machine_cpu_times()
        t0 = time.monotonic()
        cp = procs.run(["fio", "--output-format=json", f"--output={JSON_FILE}", JOB_FILE], cwd=directory,
                       timeout=timeout, check=False, env_extra=target.environment())
        wall = time.monotonic() - t0
        cpu_after = procs.machine_cpu_times()
    if cp.returncode != 0 or not (directory / JSON_FILE).exists():
        tail = " | ".join(cp.stderr.decode(errors="replace").strip().splitlines()[-3:])
        raise MeasurementError(f"fio job {job.name!r} exited {cp.returncode}: {tail}")
    return FioRun(directory, read_result(directory, str(directory)), wall, cpu_before, cpu_after)
