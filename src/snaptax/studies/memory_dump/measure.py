"""Measure the memory-dump study on a rig (needs root: loop devices). Each device role gets the qcow2 engine's bare
base volume (a raw region exported by qemu-storage-daemon over NBD, never snapshotted) as the memory file, and the
role's plan of page-walker jobs runs against it inside one RunSession."""
from __future__ import annotations

from pathlib import Path

from ... import profiles, rig as rigmod
from ...engines.qcow2 import Qcow2ChainEngine
from ...errors import ConfigError
from ...record import RunSession
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


def run(rig_name: str = "local", profile_name: str = profiles.DEFAULT, device: str | None = None) -> Path:
    """Measure the grid on both device roles; returns the published run directory under data/. `device` names the
    rig device for the spindle role (default: the rig's emulated raid1_10k)."""
    profile = profiles.get(profile_name)
    rig = rigmod.load(rig_name)
    devs = role_devices(rig, device)
    s = planmod.scale(profile)
    study = planmod.build_plan(profile)
    planned = sum(planmod.estimated_seconds(profile).values())
    params = planmod.parameters(profile, {role: d.name for role, d in devs.items()})
    with RunSession(rig, planmod.STUDY, profile, params, devices_used=tuple(d.name for d in devs.values()),
                    planned_points=study.points(), planned_seconds=planned) as session:
        for vp in study.variants:
            dev = devs[vp.variant]
            with Qcow2ChainEngine(rig, dev, planmod.MEMORY_FILE, s.memory_bytes) as engine:
                with session.in_variant(vp.variant, {**engine.describe(), "study": {
                        "role": vp.variant, "device": dev.name, "medium": dev.medium, "emulated": dev.emulated,
                        "description": dev.description}}):
                    engine.execute(vp.plan, session)
    assert session.published is not None
    return session.published
