"""Measure the metadata-cache study on a rig (needs root: loop devices): one fresh qcow2 volume per cache
coverage on the rig's SSD-class device (or `device`), its plan of neighbouring pairs inside one RunSession."""
from __future__ import annotations

from ...engines.qcow2 import execute_per_config
from ...host.rig import Rig
from ...profiles import Profile
from ...record import RunSession
from ..contract import Setup, whole_study
from . import plan as planmod


def setup(rig: Rig, profile: Profile, device: str | None = None, part: str | None = None) -> Setup:
    """Every coverage on `device` (default: the rig's first)."""
    whole_study("metadata_cache", part)
    dev = rig.device(device)
    study = planmod.build_plan(profile)
    configs = {c.name: c for c in planmod.configs(profile)}

    def measure(session: RunSession) -> None:
        execute_per_config(rig, dev, configs, study, profile.disk_size, session)
    return Setup(planmod.parameters(profile, dev.name), (dev.name,), study.points(), planmod.planned_seconds(profile),
                 measure)
