"""The loss with one snapshot measured without the transport (issue 14, part 2): `qemu-img bench` runs QEMU's block
layer in-process — no NBD, no qemu-storage-daemon, no fio — on the chain study's two qcow2 configurations, so the
paper can show how much of the SSD-class losses the measurement path shapes.

Per configuration, on the local rig's work directory (the host's SSD-class disk): a raw base of DISK bytes filled
once; then ROUNDS neighbouring pairs, in alternating order, of (a) the base alone and (b) a fresh qcow2 overlay on it
(created just before, the configuration's cluster size, extended L2 and L2 cache), each running 4 KiB reads and then
4 KiB writes at queue depth 32, O_DIRECT, native AIO. `qemu-img bench` has no random pattern: it advances by a
step, wrapping at the image's end, so a step of STRIDE clusters (a prime) scatters the requests over the whole
image — every L2 table, as fio's random job — while each is still one 4 KiB I/O. The loss of a 50/50 mix (the
chain study's randrw) is 1 − (t_r + t_w)_base / (t_r + t_w)_overlay, times per request, paired per round.
"""
from __future__ import annotations

import math
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .. import profiles
from ..engines.qcow2 import Qcow2Config, metadata_configs
from ..errors import MeasurementError, MissingTool
from ..host import procs, rig as rigmod
from ..lock import measurement_lock
from ..stats import paired_ratio_interval

DISK = profiles.get("quick").disk_size   # so the L2 cache covers the same fraction as in the chain study
COUNT = 8192              # requests per bench run (the on-disk overlay runs ~1k IOPS: ~16 s per mix)
DEPTH = 32
BLOCK = 4096
STRIDE = 7919             # clusters (a prime): successive requests land in far-apart clusters and L2 slices
ROUNDS = 4
_DONE_RE = re.compile(r"Run completed in ([0-9.]+) seconds")


def _qemu_img() -> str:
    exe = shutil.which("qemu-img")
    if not exe:
        raise MissingTool("qemu-img", "qemu-utils")
    return exe


def bench_seconds(image_opts: str, *, write: bool, count: int = COUNT, step: int = BLOCK) -> float:
    """One `qemu-img bench` run on the image described by `image_opts` (--image-opts syntax): its own timing of
    `count` requests of BLOCK bytes at queue depth DEPTH, in seconds."""
    args = [_qemu_img(), "bench", "--image-opts", "-c", str(count), "-d", str(DEPTH), "-s", str(BLOCK),
            "-S", str(step), "-t", "none", "-i", "native", *(["-w"] if write else []), image_opts]
    out = procs.run(args, timeout=600).stdout.decode()
    m = _DONE_RE.search(out)
    if not m:
        raise MeasurementError(f"qemu-img bench printed no run time: {out.strip()[-200:]!r}")
    return float(m.group(1))


def _raw_opts(path: Path) -> str:
    return f"driver=raw,file.driver=file,file.filename={path},file.aio=native,file.cache.direct=on"


def _overlay_opts(path: Path, cfg: Qcow2Config) -> str:
    """The overlay with the configuration's qcow2 open options (Qcow2Config.open_options: the L2 cache, its entry
    size, the cache-clean interval), as the chain study's engine opens it."""
    opts = [f"driver=qcow2,file.driver=file,file.filename={path},file.aio=native,file.cache.direct=on"]
    opts += [f"{k}={v}" for k, v in cfg.open_options().items()]
    return ",".join(opts)


def _create_overlay(path: Path, base: Path, cfg: Qcow2Config) -> None:
    path.unlink(missing_ok=True)
    o = f"cluster_size={cfg.cluster_size}" + (",extended_l2=on" if cfg.extended_l2 else "")
    procs.run([_qemu_img(), "create", "-q", "-f", "qcow2", "-b", str(base), "-F", "raw", "-o", o, str(path)],
              timeout=60)


def mix_seconds(image_opts: str, step: int, count: int = COUNT) -> float:
    """Read then write, `count` each: the time of a 50/50 mix's requests (seconds for 2·count)."""
    return (bench_seconds(image_opts, write=False, count=count, step=step)
            + bench_seconds(image_opts, write=True, count=count, step=step))


def run(disk: int = DISK, rounds: int = ROUNDS, count: int = COUNT) -> dict[str, float]:
    """bench figures crosscheck_loss_<config> (%, with _low/_high: paired log-ratio 95 % interval over the rounds)
    and crosscheck_base_iops / crosscheck_overlay_iops_<config> (the mix's medians)."""
    rig = rigmod.load("local")
    out: dict[str, float] = {"crosscheck_rounds": float(rounds), "crosscheck_disk_mib": disk / (1 << 20)}
    work = rig.rig_work_dir
    work.mkdir(parents=True, exist_ok=True)
    with measurement_lock(), tempfile.TemporaryDirectory(prefix="crosscheck-", dir=work) as tmp:
        base = Path(tmp) / "base.raw"
        procs.run([_qemu_img(), "create", "-q", "-f", "raw", str(base), str(disk)], timeout=60)
        # fill every byte once, so reads of the base (and through the overlay) are real reads, not holes
        procs.run([_qemu_img(), "bench", "-q", "-f", "raw", "-w", "-c", str(disk // (1 << 20)), "-s", "1M",
                   "-d", "8", "-t", "none", "-i", "native", "--pattern=90", str(base)], timeout=600)
        base_iops = []
        for cfg in metadata_configs(disk):
            step = STRIDE * cfg.cluster_size % (disk - BLOCK) or BLOCK
            overlay = Path(tmp) / f"{cfg.name}.qcow2"
            none, one = [], []
            for r in range(rounds):
                order = ("none", "one") if r % 2 == 0 else ("one", "none")
                for which in order:
                    if which == "none":
                        none.append(mix_seconds(_raw_opts(base), step, count))
                    else:
                        _create_overlay(overlay, base, cfg)       # fresh: its first writes allocate, as a snapshot's
                        one.append(mix_seconds(_overlay_opts(overlay, cfg), step, count))
            # IOPS ratio one ÷ none = time none ÷ time one, paired per round
            ratio = paired_ratio_interval(np.array(none), np.array(one))
            key = cfg.name.replace("-", "_")
            out[f"crosscheck_loss_{key}"] = 100 * (1 - ratio.estimate)
            out[f"crosscheck_loss_{key}_low"] = 100 * (1 - ratio.high) if math.isfinite(ratio.high) else math.nan
            out[f"crosscheck_loss_{key}_high"] = 100 * (1 - ratio.low) if math.isfinite(ratio.low) else math.nan
            out[f"crosscheck_overlay_iops_{key}"] = 2 * count / float(np.median(one))
            base_iops += [2 * count / t for t in none]
        out["crosscheck_base_iops"] = float(np.median(base_iops))
    return out
