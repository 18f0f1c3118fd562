"""Measure the calibration on a rig (needs root for the reads-double variant: qcow2 on a rig device)."""
from __future__ import annotations

from ...engines.qcow2 import Qcow2ChainEngine
from ...errors import ConfigError
from ...host import rig as rigmod
from ...profiles import Profile
from ...record import RunSession
from ...spindle.measure import CAPACITY, ServedSpindle
from ...spindle.profiles import DeviceSpec, DiskSpec, ZeroProfile
from ...spindle.rigfiles import disk
from .. import standin_settings
from ..contract import Setup, whole_study
from . import plan as planmod

STUDY = planmod.STUDY


def reads_double_device(rig: rigmod.Rig, device: str | None = None) -> rigmod.Device:
    """The rig device for seed 000's reads-double experiment: `device`, else the rig's emulated 10K RAID1, else
    its first hdd."""
    if device:
        return rig.device(device)
    for d in rig.devices:
        if d.emulated and d.spindle.get("device") == planmod.READS_DOUBLE_DEVICE:
            return d
    hdd = [d for d in rig.devices if d.medium == "hdd"]
    if not hdd:
        raise ConfigError(rig.source, "devices", "no hdd device for seed 000's reads-double experiment")
    return hdd[0]


def spindle_spec(variant: str) -> DeviceSpec:
    """The device a spindle variant serves: the zero-latency device, or one drive of the named profile."""
    return DiskSpec(ZeroProfile()) if variant == planmod.ZERO else disk(variant)


def setup(rig: rigmod.Rig, profile: Profile, device: str | None = None, part: str | None = None) -> Setup:
    """Every variant; `device` names the rig device for the reads-double variant (default: the rig's emulated
    raid1_10k)."""
    whole_study("calibration", part)
    dev = reads_double_device(rig, device)
    study = planmod.build_plan(profile)
    work_dir = rig.rig_work_dir / STUDY
    coverage, used = standin_settings.coverage(rig.name, planmod.STAND_IN, profile.disk_size,
                                               planmod.PRESET_COVERAGE)
    config = planmod.reads_double_config(profile, coverage)

    def measure(session: RunSession) -> None:
        for vp in study.variants:
            if vp.variant == planmod.READS_DOUBLE:
                with Qcow2ChainEngine(rig, dev, config, profile.disk_size) as engine:
                    with session.in_variant(vp.variant, engine.describe()):
                        engine.execute(vp.plan, session)
            else:
                with ServedSpindle(spindle_spec(vp.variant), CAPACITY, work_dir, vp.variant) as served:
                    with session.in_variant(vp.variant, served.describe()):
                        served.execute(vp.plan, session)
    params = planmod.parameters(profile, study, dev.name, coverage, (used,) if used else ())
    return Setup(params, (dev.name,), study.points(), planmod.planned_seconds(profile), measure)
