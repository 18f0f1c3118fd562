"""`make bench`: speed and size of the harness and engines, stated as measured figures.

Writes a flat JSON object (name → number) to bench/latest.json and prints it as a table, with the machine and
revision that measured it as flat `meta_*` keys beside the figures (commit, whether the tree was dirty, UTC date,
kernel, CPU count and model, the groups that run measured; with `--only`, the other groups' figures are kept from
the earlier run). Groups:
  harness  fio through the measurement path (NBD → qemu-storage-daemon, raw, no snapshot) versus fio with
           libaio direct=1 on the very device qsd reads, alternating rounds; median ratio of IOPS.
  spindle  emulator accuracy and overhead (snaptax.spindle.bench), when present
  guest    TCG guest boot time (snaptax.guest.bench), when present
  cofw     copy-on-first-write engine versus the raw NBD path (snaptax.cofw.bench), when present
"""
from __future__ import annotations

import importlib
import json
import os
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import fio, paths, provenance, rig as rigmod
from .backends import open_device
from .errors import ConfigError
from .lock import measurement_lock
from .procs import ProcessGroup
from .qsd import RegionStore, StorageDaemon
from .record import write_atomic

BENCH_SIZE = 1 << 30
ROUNDS = 5
RUNTIME_S = 5


def harness_job(size: int = BENCH_SIZE, runtime_s: float = RUNTIME_S) -> fio.FioJob:
    """4 KiB randrw at queue depth 32 (one job), the measurement path's hardest case: tiny I/O, deep queue."""
    return fio.FioJob("harness", "randrw", bs=4096, iodepth=32, numjobs=1, size=size, runtime_s=runtime_s,
                      log_avg_msec=None)


def harness(rounds: int = ROUNDS, size: int = BENCH_SIZE, runtime_s: float = RUNTIME_S) -> dict[str, float]:
    rig = rigmod.load("local")
    device = rig.device()
    job = harness_job(size, runtime_s)
    nbd: list[float] = []
    direct: list[float] = []
    qsd_busy: list[float] = []
    with measurement_lock(), ProcessGroup() as group, tempfile.TemporaryDirectory() as tmp:
        backend = open_device(rig, device, group, tag="bench")
        daemon = StorageDaemon(group, rig.rig_work_dir / "run" / "bench").start()
        qsd_pid = group.children[-1].proc.pid
        store = RegionStore(daemon, backend.protocol(), device.capacity)
        region = store.allocate(size, "bench")
        uri = daemon.export(region.node, "bench")
        assert backend.path is not None
        nbd_target = fio.FioTarget("nbd", uri=uri)
        direct_target = fio.FioTarget("libaio", filename=str(backend.path))
        fill = fio.FioJob("fill", "write", bs=1 << 20, iodepth=8, size=size, time_based=False, runtime_s=None,
                          log_avg_msec=None)
        fio.run(fill, direct_target, Path(tmp) / "fill")
        for r in range(rounds):
            # Alternate which path goes first so a drifting disk does not favour one of them.
            order = [("nbd", nbd_target), ("direct", direct_target)]
            for name, target in order if r % 2 == 0 else order[::-1]:
                cpu0 = _cpu_seconds(qsd_pid)
                run = fio.run(job, target, Path(tmp) / f"{name}{r}")
                if name == "nbd":
                    # qemu-storage-daemon serves an export from one event-loop thread: its CPU share shows
                    # whether that thread, not the disk, sets the ceiling.
                    qsd_busy.append((_cpu_seconds(qsd_pid) - cpu0) / run.wall_s)
                (nbd if name == "nbd" else direct).append(fio.total_iops(run.result))
        daemon.qmp.close() if daemon.qmp else None
    ratios = [a / b for a, b in zip(nbd, direct, strict=True)]
    return {
        "harness_nbd_over_direct": statistics.median(ratios),
        "harness_nbd_over_direct_min": min(ratios),
        "harness_nbd_over_direct_max": max(ratios),
        "harness_nbd_iops_median": statistics.median(nbd),
        "harness_direct_iops_median": statistics.median(direct),
        "harness_rounds": rounds,
        "harness_qsd_cpu_busy_median": statistics.median(qsd_busy),
    }


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _optional(module: str, function: str) -> Callable[[], dict[str, float]] | None:
    try:
        mod = importlib.import_module(f"snaptax.{module}")
    except ImportError:
        return None
    fn = getattr(mod, function, None)
    if fn is None:
        return None

    def call() -> dict[str, float]:
        value = fn()
        return value if isinstance(value, dict) else {function: float(value)}
    return call


def groups() -> dict[str, Callable[[], dict[str, float]]]:
    found: dict[str, Callable[[], dict[str, float]] | None] = {
        "harness": harness,
        "spindle": _optional("spindle.bench", "run"),
        "guest": _optional("guest.bench", "bench"),
        "cofw": _optional("cofw.bench", "bench"),
        "crosscheck": _optional("crosscheck", "run"),
    }
    return {k: v for k, v in found.items() if v is not None}


Figure = float | int | str | bool | None


def meta(groups_run: list[str]) -> dict[str, Figure]:
    """Where and when the figures were measured, as flat keys (bench/latest.json stays one flat object)."""
    git, host = provenance.git_state(), provenance.host()
    return {
        "meta_commit": git["commit"],
        "meta_commit_dirty": git["dirty"],
        "meta_date_utc": provenance.utc_now(),
        "meta_kernel": host["kernel"],
        "meta_cpus": host["cpus"],
        "meta_cpu_model": host["cpu"],
        "meta_groups": ",".join(groups_run),
    }


def _show(value: Figure) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def main(only: list[str] | None = None) -> dict[str, Figure]:
    available = groups()
    selected = only or list(available)
    unknown = [name for name in selected if name not in available]
    if unknown:  # before anything is measured
        raise ConfigError("snaptax bench", "--only", f"unknown benchmark group(s) {', '.join(map(repr, unknown))} "
                          f"(have: {', '.join(available)})")
    path = paths.BENCH_DIR / "latest.json"
    results: dict[str, Figure] = json.loads(path.read_text()) if path.exists() and only else {}
    done: list[str] = []
    for name in selected:
        print(f"bench {name} ...", flush=True)
        results.update(available[name]())
        done.append(name)
        results.update(meta(done))
        write_atomic(path, json.dumps(results, indent=1, sort_keys=True) + "\n")
    width = max(len(k) for k in results)
    for key in sorted(results):
        print(f"  {key:<{width}}  {_show(results[key])}")
    print(f"wrote {path}")
    return results
