"""Measure the memory-dump study on a rig (needs root: loop devices). Each device role gets the qcow2 engine's bare
base volume (a raw region exported by qemu-storage-daemon over NBD, never snapshotted) as the memory file, and the
role's plan of page-walker jobs runs against it inside one RunSession. Then the guest phase: a TCG guest whose memory
QEMU saves while it runs (snaptax.guest.memsnap), into the rig's work directory; its dumps and the guest's progress
samples go into the run as guest_dump.json."""
from __future__ import annotations

import json
from pathlib import Path
from typing import cast

from ... import profiles
from ...engines.qcow2 import Qcow2ChainEngine
from ...errors import ConfigError
from ...guest import build_image
from ...guest.memsnap import UNLIMITED_BANDWIDTH, Dirtier, DumpRequest, Method, run_memsnap
from ...host import rig as rigmod
from ...host.procs import ProcessGroup
from ...operatingpoints import UsedPoint
from ...plan import split_replicate
from ...profiles import Profile
from ...record import RunSession
from ..contract import Setup
from . import plan as planmod


def role_devices(rig: rigmod.Rig, device: str | None = None) -> dict[str, rigmod.Device]:
    """Role → rig device: `ssd` is the rig's first SSD-class device that is not emulated; `raid1_10k` is `device`
    if given, else the rig's emulated raid1_10k, else its first hdd."""
    ssd = [d for d in rig.devices if d.medium == "ssd" and not d.emulated]
    if not ssd:
        raise ConfigError(rig.source, "devices", "no SSD-class device (medium: ssd) for the memory-dump study")
    if device:
        spindle = rig.device(device)
    else:
        named = [d for d in rig.devices if d.emulated and d.spindle.get("device") == planmod.SPINDLE]
        hdd = [d for d in rig.devices if d.medium == "hdd"]
        if not (named or hdd):
            raise ConfigError(rig.source, "devices", f"no {planmod.SPINDLE} and no hdd device for the memory-dump "
                              "study's spindle role")
        spindle = (named or hdd)[0]
    return {planmod.SSD: ssd[0], planmod.SPINDLE: spindle}


def skip_point(rig: str, s: planmod.MemoryDumpScale) -> tuple[float | None, tuple[UsedPoint, ...]]:
    """The stand-in's inferred zero share on `rig` (plan.zero_share_on), at which the skipping walker measures, and the
    operating point as the run records it (realised at scale `s`); (None, ()) where the rig has none."""
    point = planmod.zero_share_on(rig)
    if point is None:
        return None, ()
    return point.value, (UsedPoint.of(point, planmod.realised_zero_fraction(s, point.value)),)


def setup(rig: rigmod.Rig, profile: Profile, device: str | None = None, part: str | None = None) -> Setup:
    """The grid on both device roles, then the guest's dumps; `device` names the rig device for the spindle role
    (default: the rig's emulated raid1_10k); `part`: one role's pass, or the guest phase (planmod.parts). Every part
    records both roles' devices as the devices it uses, as a whole run does, so that the parts of one set share
    their conditions (record.parts: the emulator's version is recorded where an emulated device is used)."""
    devs = role_devices(rig, device)
    s = planmod.scale(profile)
    zero_fraction, used = skip_point(rig.name, s)
    study = planmod.build_plan(profile, part=part, zero_fraction=zero_fraction)
    guest = planmod.measures_guest(part)

    def measure(session: RunSession) -> None:
        for vp in study.variants:
            role = split_replicate(vp.variant)[0]
            dev = devs[role]
            with Qcow2ChainEngine(rig, dev, planmod.MEMORY_FILE, s.memory_bytes) as engine:
                with session.in_variant(vp.variant, {**engine.describe(), "study": {
                        "role": role, "device": dev.name, "medium": dev.medium, "emulated": dev.emulated,
                        "description": dev.description}}):
                    engine.execute(vp.plan, session)
        if guest:
            guest_phase(rig, profile, session)
    return Setup(planmod.parameters(profile, {role: d.name for role, d in devs.items()}, used),
                 tuple(d.name for d in devs.values()), study.points(),
                 planmod.planned_seconds(profile, part=part, zero_fraction=zero_fraction),
                 measure, planmod.parts(profile) if part is not None else ())


def guest_phase(rig: rigmod.Rig, profile: profiles.Profile, session: RunSession) -> Path:
    """Boot the guest once and take the plan's dumps of its memory while it runs; writes guest_dump.json into the
    run (the planned dumps beside what each measured). Every process, socket and file of the phase is gone when
    this returns or raises (the console log stays in the run for inspection)."""
    g = planmod.guest_scale(profile)
    planned = planmod.guest_dumps(profile)
    requests = [DumpRequest(cast(Method, d.method), int(d.bandwidth_bytes_s or UNLIMITED_BANDWIDTH),
                            planmod.GUEST_BASELINE_S, d.label) for d in planned]
    image = build_image()
    scratch = rig.rig_work_dir / "memdump-guest"
    session.log_event("guest_start", memory_mib=g.memory_mib, dumps=len(planned))
    session.progress.say(f"guest phase: a {g.memory_mib} MiB TCG guest, {len(planned)} memory dumps while it runs, "
                         f"~{planmod.guest_estimated_seconds(profile):.0f} s planned")
    with ProcessGroup() as pg:
        pg.own(scratch)
        run = run_memsnap(image, Dirtier(g.fill_mib, planmod.GUEST_DIRTY_PAGES_S), requests,
                          memory_mib=g.memory_mib, scratch=scratch, pg=pg)
        out = session.staging / planmod.GUEST_FILE
        doc = run.to_json()
        doc["planned"] = [{"method": d.method, "label": d.label, "repeat": d.repeat,
                           "point": None if d.point is None else [d.point.block_pages, d.point.wait_ms],
                           "bandwidth_bytes_s": d.bandwidth_bytes_s} for d in planned]
        doc["image"] = {"key": image.key, "kernel_release": image.provenance.get("kernel_release")}
        out.write_text(json.dumps(doc, indent=1) + "\n")
        console = run.console_path.read_text(errors="replace")
        (session.staging / planmod.GUEST_CONSOLE).write_text(console[-200_000:])
    session.log_event("guest_done", wall_s=round(run.wall_s, 2), background_snapshot=run.background_snapshot)
    session.progress.say(f"guest phase: {len(run.dumps)} dumps in {run.wall_s:.0f} s")
    return out
