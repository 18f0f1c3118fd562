"""Synthetic published runs in the real record format (through snaptax.record.RunWriter): no daemon, no fio."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from snaptax import fio, profiles
from snaptax.host.rig import Device, Rig
from snaptax.plan import Measure
from snaptax.record import RunPart, RunWriter


def fio_result(job: str, read_iops: float = 0.0, write_iops: float = 0.0, runtime_s: float = 1.0,
               clat_us: float = 100.0) -> dict:
    """A minimal fio JSON result: one job group with the given read and write IOPS."""
    def side(iops: float) -> dict:
        return {"iops": iops, "bw": iops * 4, "total_ios": int(round(iops * runtime_s)), "runtime": runtime_s * 1000,
                "clat_ns": {"mean": clat_us * 1e3, "percentile": {"50.000000": clat_us * 1e3}},
                "lat_ns": {"mean": clat_us * 1e3}}
    return {"jobs": [{"jobname": job, "error": 0, "read": side(read_iops) if read_iops else {},
                      "write": side(write_iops) if write_iops else {}}]}


def rig(tmp: Path) -> Rig:
    return Rig(name="t", kind="embedded", description="synthetic", engines=("qcow2",), work_dir=tmp / "work",
               devices=(Device(name="ssd", type="file", medium="ssd", capacity=1 << 30),))


# (variant, index, Measure, chain length) -> (fio result, counters before, counters after, extra)
Measured = Callable[[str, int, Measure, int], tuple[dict, dict, dict, dict]]


def write_run(tmp: Path, study: str, profile: str, parameters: dict,
              points: list[tuple[str, int, Measure, int]], measured: Measured,
              variants: dict[str, dict] | None = None, run_id: str | None = None,
              part: RunPart | None = None) -> Path:
    """Publish a run of `study` into tmp/data/t/<study>/<run> holding one measurement per point; `part`: the part
    of the study it measured (None: a whole run)."""
    # staging: tmp/staging/<study> (tests write a study's own files there), per run id when several are published
    staging = tmp / "staging" / study / (run_id or "")
    run_id = run_id or f"20260101T000000Z-{profile}"
    w = RunWriter(rig(tmp), study, profiles.get(profile), parameters, staging, run_id=run_id, part=part)
    for variant, index, step, chain in points:
        with w.in_variant(variant, (variants or {}).get(variant, {})):
            d = w.measurement_dir(index, step)
            result, before, after, extra = measured(variant, index, step, chain)
            w.record_measurement(index, step, chain_length=chain, fio_run=fio.FioRun(d, result, 1.0),
                                 counters_before=before, counters_after=after, extra=extra)
    return w.publish(tmp / "data" / "t" / study / w.run_id)


def judged(key: str, value: float, low: float, high: float, n: int = 3, unit: str = "%", digits: int = 1):
    """A Value over n independent runs whose 95 % interval is [low, high] (a linear t pivot, centred on `value`):
    what a converted study's analysis gives the verdict rule."""
    import math

    from scipy import stats as sps

    from snaptax.values import Value
    se = (high - low) / 2 / float(sps.t.ppf(0.975, n - 1)) if n > 1 else math.nan
    return Value(key, value, unit, low, high, n, digits, None, "t", se, n - 1, "linear", True)


def fio_log(per_second, jobs=4, short_jobs=0):
    """An IOPS log as fio 3.33 writes one for `jobs` jobs with per_job_logs=0: each job's lines in turn, one line per
    second and direction (time ms, IOPS, direction, block size, offset), the samples a ms or so off each whole
    second; `per_second` the run's total IOPS in each second, split evenly over jobs and directions. The first
    `short_jobs` jobs stop before their last sample (a job of fio that ends just before its next second)."""
    lines = []
    for j in range(jobs):
        for k in range(len(per_second) - (1 if j < short_jobs else 0)):
            t = 1000 * (k + 1) + j % 3 - 1
            v = round(per_second[k] / (2 * jobs))
            lines += [f"{t}, {v}, 0, 4096, 0", f"{t}, {v}, 1, 4096, 0"]
    return "\n".join(lines) + "\n"
