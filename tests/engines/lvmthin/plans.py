"""Plans the LVM thin engine's tests run: a verified fill, verified scattered writes, a chain of three."""
from __future__ import annotations

from snaptax.fio import FioJob
from snaptax.plan import DeleteSnapshot, Measure, Plan, TakeSnapshot

MiB = 1 << 20


def fill_job(size: int) -> FioJob:
    return FioJob(name="fill", rw="write", bs=64 << 10, iodepth=8, size=size, time_based=False, runtime_s=None,
                  verify="crc32c", log_avg_msec=None)


def scatter_job(size: int, ios: int = 64) -> FioJob:
    """`ios` random 4 KiB writes over the volume, verified by fio; randrepeat: the same offsets every time."""
    return FioJob(name="scatter", rw="randwrite", bs=4096, iodepth=16, size=size, time_based=False,
                  runtime_s=None, verify="crc32c", log_avg_msec=None, extra=(("number_ios", str(ios)),))


def chain_plan(size: int) -> Plan:
    steps: list = [Measure(fill_job(size), "prefill")]
    for i in range(3):
        steps += [TakeSnapshot(), Measure(scatter_job(size), "create", i)]
    steps += [DeleteSnapshot("oldest"), Measure(scatter_job(size), "delete", 0),
              DeleteSnapshot("newest"), DeleteSnapshot("newest"), Measure(scatter_job(size), "delete", 1)]
    return Plan(tuple(steps))


# ---------------------------------------------------------------- fast
