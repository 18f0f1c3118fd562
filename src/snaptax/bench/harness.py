"""The `harness` group of `make bench` (snaptax.bench): fio through the measurement path (NBD →
qemu-storage-daemon, raw, no snapshot; one connection and two; the file node with io_uring instead of native AIO; a
null backend) versus fio with libaio direct=1 on the very device qsd reads, rotating rounds; median ratios of IOPS and
the CPU per I/O of each path.
"""
from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from .. import fio, paths
from ..host import procs, rig as rigmod
from ..host.backends import open_device
from ..host.procs import ProcessGroup
from ..host.qsd import RegionStore, StorageDaemon
from ..lock import measurement_lock

BENCH_SIZE = 1 << 30
ROUNDS = 5
RUNTIME_S = 5


def harness_job(size: int = BENCH_SIZE, runtime_s: float = RUNTIME_S, connections: int = 1) -> fio.FioJob:
    """4 KiB randrw, 32 outstanding (the measurement path's hardest case: tiny I/O, deep queue) over
    `connections` fio jobs: fio's nbd engine opens one connection per job, and qemu-storage-daemon serves at most
    16 requests per connection, so 2 × 16 keeps all 32 in service where 1 × 32 leaves 16 waiting in the socket."""
    return fio.FioJob("harness", "randrw", bs=4096, iodepth=32 // connections, numjobs=connections, size=size,
                      runtime_s=runtime_s, log_avg_msec=None)


# The paths one round measures, each as (fio target name, connections). "nbd" is the path the studies use (the
# daemon's file node with qsd.FILE_AIO); "nbd_io_uring" the same bytes through a second file node that submits with
# io_uring, the alternative FILE_AIO was chosen against; "null" is the transport alone: NBD to the daemon's null-aio
# node, which completes every request without a device.
HARNESS_PATHS: dict[str, tuple[str, int]] = {
    "direct": ("direct", 1), "nbd": ("nbd", 1), "nbd_multiconn": ("nbd", 2), "nbd_io_uring": ("nbd_io_uring", 1),
    "null": ("null", 1)}


def harness(rounds: int = ROUNDS, size: int = BENCH_SIZE, runtime_s: float = RUNTIME_S) -> dict[str, float]:
    """The measurement path against fio's libaio on the same device, with the CPU each side spends per I/O.

    Per run: IOPS; the machine's busy CPU (all CPUs, /proc/stat, without steal: procs.cpu_times),
    qemu-storage-daemon's and fio's own CPU, each in µs per I/O. When both paths keep every CPU busy,
    IOPS ∝ 1 / (CPU per I/O), so
    harness_nbd_over_direct_cpu_bound = CPU per I/O direct ÷ CPU per I/O NBD predicts harness_nbd_over_direct;
    a measured ratio well below it would say the path waits on something other than the CPUs. The daemon's one
    event-loop thread bounds the path at harness_qsd_thread_ceiling_over_direct whatever the CPUs do."""
    rig = rigmod.load("local")
    device = rig.device()
    iops: dict[str, list[float]] = {name: [] for name in HARNESS_PATHS}
    cpu: dict[str, dict[str, list[float]]] = {name: {"machine": [], "qsd": [], "fio": [], "busy": []}
                                               for name in HARNESS_PATHS}
    with measurement_lock(), ProcessGroup() as group, tempfile.TemporaryDirectory() as tmp:
        backend = open_device(rig, device, group, tag="bench")
        daemon = StorageDaemon(group, paths.engine_run_dir(rig.rig_work_dir, "bench")).start()
        qsd_pid = group.children[-1].proc.pid
        store = RegionStore(daemon, backend.protocol(), device.capacity)
        region = store.allocate(size, "bench")
        # the same bytes (offset 0 of the device) through a node of its own that submits with io_uring
        uring = RegionStore(daemon, backend.protocol(aio="io_uring"), device.capacity).allocate(size, "uring")
        daemon.execute("blockdev-add", driver="null-aio", size=size, **{"node-name": "bench-null"})
        assert backend.path is not None
        targets = {"nbd": fio.FioTarget("nbd", uri=daemon.export(region.node, "bench")),
                   "nbd_io_uring": fio.FioTarget("nbd", uri=daemon.export(uring.node, "bench-uring")),
                   "null": fio.FioTarget("nbd", uri=daemon.export("bench-null", "bench-null")),
                   "direct": fio.FioTarget("libaio", filename=str(backend.path))}
        fill = fio.FioJob("fill", "write", bs=1 << 20, iodepth=8, size=size, time_based=False, runtime_s=None,
                          log_avg_msec=None)
        fio.run(fill, targets["direct"], Path(tmp) / "fill")
        for r in range(rounds):
            # Rotate which path goes first so a drifting disk does not favour one of them.
            names = list(HARNESS_PATHS)
            for name in names[r % len(names):] + names[:r % len(names)]:
                target, connections = HARNESS_PATHS[name]
                machine0, qsd0 = _machine_busy_seconds(), _cpu_seconds(qsd_pid)
                run = fio.run(harness_job(size, runtime_s, connections), targets[target], Path(tmp) / f"{name}{r}")
                machine, qsd_s = _machine_busy_seconds() - machine0, _cpu_seconds(qsd_pid) - qsd0
                ios = sum(row["ios"] for row in fio.tidy_rows(run.result))
                iops[name].append(fio.total_iops(run.result))
                cpu[name]["machine"].append(machine / ios * 1e6)
                cpu[name]["qsd"].append(qsd_s / ios * 1e6)
                cpu[name]["fio"].append(_fio_cpu_seconds(run.result) / ios * 1e6)
                cpu[name]["busy"].append(machine / run.wall_s)
        daemon.qmp.close() if daemon.qmp else None
    med = statistics.median
    out: dict[str, float] = {"harness_rounds": rounds,
                             "harness_nbd_iops_median": med(iops["nbd"]),
                             "harness_direct_iops_median": med(iops["direct"])}
    for name in ("nbd", "nbd_multiconn", "nbd_io_uring", "null"):
        ratios = [a / b for a, b in zip(iops[name], iops["direct"], strict=True)]
        out |= {f"harness_{name}_over_direct": med(ratios), f"harness_{name}_over_direct_min": min(ratios),
                f"harness_{name}_over_direct_max": max(ratios)}
    for name in HARNESS_PATHS:
        out |= {f"harness_cpu_us_per_io_{name}": med(cpu[name]["machine"]),
                f"harness_fio_cpu_us_per_io_{name}": med(cpu[name]["fio"]),
                f"harness_cpu_busy_cores_{name}": med(cpu[name]["busy"])}
        if name != "direct":
            out[f"harness_qsd_cpu_us_per_io_{name}"] = med(cpu[name]["qsd"])
    out["harness_qsd_cpu_busy_median"] = med(q * i / 1e6 for q, i in zip(cpu["nbd"]["qsd"], iops["nbd"], strict=True))
    out["harness_nbd_over_direct_cpu_bound"] = out["harness_cpu_us_per_io_direct"] / out["harness_cpu_us_per_io_nbd"]
    # The daemon serves an export from one event-loop thread: at its CPU per I/O that thread alone can carry at most
    # 1/(µs per I/O) requests per second, whatever the connections.
    out["harness_qsd_thread_ceiling_over_direct"] = \
        1e6 / out["harness_qsd_cpu_us_per_io_nbd_multiconn"] / out["harness_direct_iops_median"]
    return out


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (/proc/PID/stat fields 14 and 15)."""
    return procs.cpu_seconds(Path(f"/proc/{pid}/stat").read_text())


def _machine_busy_seconds() -> float:
    """Busy CPU seconds of all CPUs so far (/proc/stat's first line; busy as procs.cpu_times defines it)."""
    return procs.machine_cpu_times().busy_s


def _fio_cpu_seconds(result: dict) -> float:
    """fio's own CPU seconds: usr_cpu and sys_cpu are per cent of one CPU over each job's runtime (ms)."""
    return sum((job["usr_cpu"] + job["sys_cpu"]) / 100 * job["job_runtime"] / 1e3 for job in result["jobs"])
