"""Measure the database-snapshot study (needs root): one variant per snapshot device, each a fresh
copy-on-first-write volume on that snapshot device's source (plan.SOURCE_DEVICES) with its snapshots on the snapshot
device, in one RunSession."""
from __future__ import annotations

from ...engines.cofw import CofwEngine
from ...errors import ConfigError
from ...host import rig as rigmod
from ...plan import split_replicate
from ...profiles import Profile
from ...record import RunSession
from ..contract import Setup, whole_study
from . import plan as planmod


def snapshot_devices(rig: rigmod.Rig, source: rigmod.Device) -> dict[str, rigmod.Device]:
    """The rig's device for each of the study's snapshot devices (by name), none of them the source."""
    out: dict[str, rigmod.Device] = {}
    have = {d.name: d for d in rig.devices}
    for name in planmod.SNAPSHOT_DEVICES:
        if name not in have:
            raise ConfigError(rig.source, "devices", f"no device named {name!r} for the db_snapshots study's "
                              f"snapshot files (have: {', '.join(have)})")
        if name == source.name:
            raise ConfigError(rig.source, "devices", f"{name!r} is the source device: the snapshots need a device "
                              "of their own")
        out[name] = have[name]
    return out


def source_devices(rig: rigmod.Rig, device: str | None = None) -> dict[str, rigmod.Device]:
    """The source's rig device per snapshot device: `device` for all of them when given, else plan.SOURCE_DEVICES;
    each checked against its snapshot device (snapshot_devices)."""
    out = {name: rig.device(device or planmod.SOURCE_DEVICES[name]) for name in planmod.SNAPSHOT_DEVICES}
    for source in out.values():
        snapshot_devices(rig, source)      # raises if the source is one of the snapshot devices
    return out


def write_cap(device: rigmod.Device) -> float | None:
    """The device's write cap (MB/s) where the rig gives it one (rigs/*.yaml `throttle`), else None."""
    return device.throttle.write_mb_s if device.throttle is not None and device.throttle.write_mb_s else None


def setup(rig: rigmod.Rig, profile: Profile, device: str | None = None, part: str | None = None) -> Setup:
    """Both snapshot devices; `device` names one source device for both (default: plan.SOURCE_DEVICES)."""
    whole_study("db_snapshots", part)
    sources = source_devices(rig, device)
    snapdevs = {name: rig.device(name) for name in planmod.SNAPSHOT_DEVICES}
    s = planmod.scale(profile)
    study = planmod.build_plan(profile)
    statement = {name: planmod.statement_ns(write_cap(d)) for name, d in snapdevs.items()}

    def measure(session: RunSession) -> None:
        for vp in study.variants:
            name = split_replicate(vp.variant)[0]
            snapdev, source = snapdevs[name], sources[name]
            cfg = planmod.engine_config(statement[name])
            with CofwEngine(rig, source, cfg, s.table_bytes, snapshot_device=snapdev) as engine:
                with session.in_variant(vp.variant, {**engine.describe(), "snapshot_device_emulated":
                                                     snapdev.emulated, "source_emulated": source.emulated}):
                    engine.execute(vp.plan, session)
    used = tuple(dict.fromkeys([*(d.name for d in sources.values()), *snapdevs]))
    return Setup(planmod.parameters(s, {n: d.name for n, d in sources.items()}, statement), used, study.points(),
                 planmod.planned_seconds(profile), measure)


__all__ = ["snapshot_devices", "source_devices", "write_cap", "setup"]
