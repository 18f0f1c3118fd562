"""cofw_engine_over_raw: how much the copy-on-first-write engine itself costs, with no snapshot at all.

IOPS of fio 4 KiB randrw at QD32 through the engine (nbdkit + Python plugin, O_DIRECT) divided by IOPS of the raw
NBD path (qemu-storage-daemon exporting the same file, cache.direct=on, aio=io_uring). Both serve the *same*
prefilled file, never at the same time; rounds alternate the order (engine first, then raw first, ...) so a drift
of the shared virtual disk hits both, and the result is the median of the per-round ratios. The whole bench holds
the machine-wide measurement lock.
"""
from __future__ import annotations

import os
import statistics
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import fio
from ..errors import ConfigError
from ..lock import measurement_lock
from ..paths import work_dir
from ..procs import ProcessGroup
from .launch import CofwEngineConfig, CofwServer


@dataclass(frozen=True)
class BenchConfig:
    size: int = 1 << 30            # volume size; randrw spans all of it
    runtime_s: float = 5           # as snaptax.bench's harness group
    ramp_time_s: float = 1
    rounds: int = 5
    iodepth: int = 32
    page_size: int = 8192
    threads: int = 16              # nbdkit worker threads per connection

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise ConfigError("cofw bench", "rounds", "must be >= 1")
        if self.size % self.page_size:
            raise ConfigError("cofw bench", "size", f"must be a multiple of page_size {self.page_size}")


@dataclass
class BenchResult:
    value: float                               # median of per-round engine/raw IOPS ratios
    engine_iops: list[float] = field(default_factory=list)
    raw_iops: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
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


def cofw_engine_over_raw(workdir: Path | None = None, config: BenchConfig = BenchConfig()) -> BenchResult:
    from ..qsd import StorageDaemon, protocol_for

    base = Path(workdir) if workdir else work_dir()
    base.mkdir(parents=True, exist_ok=True)
    job = fio.FioJob(name="randrw4k", rw="randrw", bs=4096, iodepth=config.iodepth, size=config.size,
                     runtime_s=config.runtime_s, ramp_time_s=config.ramp_time_s, log_avg_msec=None)
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
        server.close()
        if qsd.qmp:
            qsd.qmp.close()
    result.value = statistics.median(result.ratios)
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
    }


if __name__ == "__main__":   # python -m snaptax.cofw.bench [size_MiB runtime_s rounds]
    import json
    import sys
    args = [int(a) for a in sys.argv[1:]]
    values = [args[0] << 20, *args[1:]] if args else []
    cfg = BenchConfig(**dict(zip(("size", "runtime_s", "rounds")[:len(values)], values, strict=True)))
    print(json.dumps(cofw_engine_over_raw(config=cfg).as_dict(), indent=1))
