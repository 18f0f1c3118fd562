"""cofw_engine_over_raw: how much the copy-on-first-write engine itself costs, with no snapshot at all;
cofw_first_write_over_raw: what a write that breaks a page costs, against the same write on the raw path.

IOPS of fio 4 KiB randrw at QD32 through the engine (nbdkit + the C plugin cofw.c, O_DIRECT) divided by IOPS of the raw
NBD path (qemu-storage-daemon exporting the same file, cache.direct=on, aio=native: qsd.FILE_AIO). Both serve the *same*
prefilled file, never at the same time; rounds alternate the order (engine first, then raw first, ...) so a drift
of the shared virtual disk hits both, and the result is the median of the per-round ratios. The whole bench holds
the machine-wide measurement lock.

First writes: each round takes a fresh snapshot (sparse file beside the volume, durability=sync), then writes every
page of a `first_write_span` region exactly once (random order, page-sized, QD32, not time-based), so every write
copies its page — read old page, write it to the snapshot, fdatasync, write the source — and drops the snapshot;
the raw path runs the identical job. Their IOPS ratio is the price of copy-on-first-write on this machine, engine
overhead included (compare with cofw_engine_over_raw to separate the two).
"""
from __future__ import annotations

import os
import statistics
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import fio, paths
from ..cofw.launch import CofwEngineConfig, CofwServer
from ..errors import ConfigError, EngineError
from ..host.procs import ProcessGroup
from ..lock import measurement_lock


@dataclass(frozen=True)
class BenchConfig:
    size: int = 1 << 30            # volume size; randrw spans all of it
    runtime_s: float = 5           # as snaptax.bench's harness group
    ramp_time_s: float = 1
    rounds: int = 5
    iodepth: int = 32
    page_size: int = 8192
    threads: int = 16              # nbdkit worker threads per connection
    first_write_span: int = 64 << 20   # bytes written once per round after a fresh snapshot (8192 page breaks)

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise ConfigError("cofw bench", "rounds", "must be >= 1")
        if self.size % self.page_size:
            raise ConfigError("cofw bench", "size", f"must be a multiple of page_size {self.page_size}")
        if not 0 < self.first_write_span <= self.size or self.first_write_span % self.page_size:
            raise ConfigError("cofw bench", "first_write_span",
                              f"must be a multiple of page_size {self.page_size} within size {self.size}")


@dataclass
class BenchResult:
    value: float                               # median of per-round engine/raw IOPS ratios
    engine_iops: list[float] = field(default_factory=list)
    raw_iops: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    first_write: float = float("nan")          # median of per-round first-write/raw-write IOPS ratios
    first_write_iops: list[float] = field(default_factory=list)
    raw_write_iops: list[float] = field(default_factory=list)
    first_write_ratios: list[float] = field(default_factory=list)
    config: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def _prefill(path: Path, size: int) -> None:
    """Real data everywhere: reads of holes or unwritten extents would never reach the disk."""
    chunk = os.urandom(1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for off in range(0, size, len(chunk)):
            os.pwrite(fd, chunk[: min(len(chunk), size - off)], off)
        os.fsync(fd)
    finally:
        os.close(fd)


def cofw_engine_over_raw(work_dir: Path | None = None, config: BenchConfig = BenchConfig()) -> BenchResult:
    from ..host.qsd import StorageDaemon, protocol_for

    base = Path(work_dir) if work_dir else paths.work_dir()
    base.mkdir(parents=True, exist_ok=True)
    job = fio.FioJob(name="randrw4k", rw="randrw", bs=4096, iodepth=config.iodepth, size=config.size,
                     runtime_s=config.runtime_s, ramp_time_s=config.ramp_time_s, log_avg_msec=None)
    breaks = fio.FioJob(name="firstwrite", rw="randwrite", bs=config.page_size, iodepth=config.iodepth,
                        size=config.first_write_span, time_based=False, log_avg_msec=None)
    result = BenchResult(value=float("nan"), config=asdict(config))
    with ProcessGroup() as group:
        scratch = group.own(Path(tempfile.mkdtemp(prefix="cofw-bench-", dir=base)))
        volume = scratch / "volume.img"
        _prefill(volume, config.size)
        qsd = StorageDaemon(group, scratch / "qsd").start()
        qsd.execute("blockdev-add", **{"node-name": "vol"}, **protocol_for("file", path=volume))
        raw = fio.FioTarget("nbd", uri=qsd.export("vol", "raw"))
        server = CofwServer(group, scratch / "cofw", volume, scratch / "snaps",
                            CofwEngineConfig(name="bench", page_size=config.page_size, threads=config.threads),
                            ).start()
        engine = fio.FioTarget("nbd", uri=server.uri("live"))
        with measurement_lock():
            for r in range(config.rounds):
                order = [("engine", engine), ("raw", raw)]
                if r % 2:
                    order.reverse()
                got = {}
                for label, target in order:
                    run = fio.run(job, target, scratch / f"round{r}-{label}")
                    got[label] = fio.total_iops(run.result)
                result.engine_iops.append(got["engine"])
                result.raw_iops.append(got["raw"])
                result.ratios.append(got["engine"] / got["raw"])
            assert server.counters()["pages_copied"] == 0      # no snapshot: the engine must not have copied
            pages = config.first_write_span // config.page_size
            for r in range(config.rounds):
                got = {}
                for label in (("engine", "raw") if r % 2 == 0 else ("raw", "engine")):
                    if label == "engine":
                        before = server.counters()["pages_copied"]
                        server.create(f"bench{r}")
                        run = fio.run(breaks, engine, scratch / f"first{r}-engine")
                        copied = server.counters()["pages_copied"] - before
                        server.delete(f"bench{r}")
                        if copied != pages:       # the figure is only what it says if every write broke a page
                            raise EngineError(f"cofw bench: {copied} pages copied, expected {pages}")
                    else:
                        run = fio.run(breaks, raw, scratch / f"first{r}-raw")
                    got[label] = fio.total_iops(run.result)
                result.first_write_iops.append(got["engine"])
                result.raw_write_iops.append(got["raw"])
                result.first_write_ratios.append(got["engine"] / got["raw"])
        server.close()
        if qsd.qmp:
            qsd.qmp.close()
    result.value = statistics.median(result.ratios)
    result.first_write = statistics.median(result.first_write_ratios)
    return result


def bench() -> dict[str, float]:
    """The `make bench` group (snaptax.bench): flat name -> number."""
    r = cofw_engine_over_raw()
    return {
        "cofw_engine_over_raw": r.value,
        "cofw_engine_over_raw_min": min(r.ratios),
        "cofw_engine_over_raw_max": max(r.ratios),
        "cofw_engine_iops_median": statistics.median(r.engine_iops),
        "cofw_raw_iops_median": statistics.median(r.raw_iops),
        "cofw_rounds": float(len(r.ratios)),
        "cofw_first_write_over_raw": r.first_write,
        "cofw_first_write_over_raw_min": min(r.first_write_ratios),
        "cofw_first_write_over_raw_max": max(r.first_write_ratios),
        "cofw_first_write_iops_median": statistics.median(r.first_write_iops),
        "cofw_raw_write_iops_median": statistics.median(r.raw_write_iops),
    }


if __name__ == "__main__":   # python -m snaptax.bench.cofw [size_MiB runtime_s rounds]
    import json
    import sys
    args = [int(a) for a in sys.argv[1:]]
    values = [args[0] << 20, *args[1:]] if args else []
    cfg = BenchConfig(**dict(zip(("size", "runtime_s", "rounds")[:len(values)], values, strict=True)))
    print(json.dumps(cofw_engine_over_raw(config=cfg).as_dict(), indent=1))
