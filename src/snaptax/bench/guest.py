"""tcg_guest_boot_s: median seconds from starting qemu to the guest's READY line (modules loaded, disks found).

This is the fixed cost every guest-side plan pays once; building the image is not included (it is cached and
built before the first timed boot). Timed under the machine-wide measurement lock, like every measurement.
"""
from __future__ import annotations

import json
import shutil
import statistics
import tempfile
from pathlib import Path

from .. import paths
from ..errors import MeasurementError
from ..guest.image import build_image
from ..guest.vm import GuestConfig, run_guest
from ..lock import measurement_lock


def boot_times(boots: int = 3, work_dir: Path | None = None, config: GuestConfig = GuestConfig()) -> list[float]:
    """Boot-to-ready seconds of `boots` consecutive boots of the snaptax guest (TCG), in order."""
    if boots < 1:
        raise MeasurementError(f"tcg_guest_boot_s: boots must be >= 1, got {boots}")
    work = work_dir or paths.work_dir()
    image = build_image(work if work_dir else None)  # built before timing starts
    work.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-guest-", dir=work))
    times: list[float] = []
    try:
        with measurement_lock():
            for i in range(boots):
                run = run_guest(image, [], "true", tmp / f"out{i}", config=config, run_dir=tmp / f"run{i}")
                if run.boot_to_ready_s is None:
                    raise MeasurementError("the guest never printed its READY line")
                times.append(run.boot_to_ready_s)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return times


def tcg_guest_boot_s(boots: int = 3, work_dir: Path | None = None, config: GuestConfig = GuestConfig()) -> float:
    """Median boot-to-ready time in seconds over `boots` boots of the snaptax guest (TCG)."""
    return statistics.median(boot_times(boots, work_dir, config))


def bench(boots: int = 5) -> dict[str, float]:
    """The `make bench` group (snaptax.bench): flat name -> number."""
    times = boot_times(boots)
    return {"tcg_guest_boot_s": statistics.median(times), "tcg_guest_boot_s_min": min(times),
            "tcg_guest_boot_s_max": max(times), "tcg_guest_boots": float(len(times)),
            "tcg_guest_initrd_mib": build_image().provenance["initrd_bytes"] / (1 << 20)}


if __name__ == "__main__":  # python -m snaptax.bench.guest
    print(json.dumps(bench(), indent=1))
