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
from ..lock import measurement_lock
from .image import build_image
from .vm import GuestConfig, run_guest


def tcg_guest_boot_s(boots: int = 3, work_dir: Path | None = None, config: GuestConfig = GuestConfig()) -> float:
    """Median boot-to-ready time in seconds over `boots` boots of the snaptax guest (TCG)."""
    if boots < 1:
        raise MeasurementError(f"tcg_guest_boot_s: boots must be >= 1, got {boots}")
    work = work_dir or paths.work_dir()
    image = build_image(work)
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
    return statistics.median(times)


if __name__ == "__main__":  # python -m snaptax.guest.bench
    print(json.dumps({"tcg_guest_boot_s": round(tcg_guest_boot_s(), 3)}))
