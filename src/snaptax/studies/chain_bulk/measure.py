"""Measure the chain-bulk study on a rig (needs root: loop devices): one fresh qcow2 volume per configuration on
the rig's SSD-class device (or `device`), its plan inside one RunSession."""
from __future__ import annotations

from pathlib import Path

from ... import profiles
from ...engines.qcow2 import execute_per_config
from ...host import rig as rigmod
from ...record import RunSession
from . import plan as planmod


def run(rig_name: str = "local", profile_name: str = profiles.DEFAULT, device: str | None = None) -> Path:
    """Measure both configurations; returns the published run directory under data/."""
    profile = profiles.get(profile_name)
    rig = rigmod.load(rig_name)
    dev = rig.device(device)
    study = planmod.build_plan(profile)
    configs = {c.name: c for c in planmod.configs(profile)}
    with RunSession(rig, planmod.STUDY, profile, planmod.parameters(profile, dev.name).to_json(),
                    devices_used=(dev.name,),
                    planned_points=study.points(), planned_seconds=planmod.planned_seconds(profile)) as session:
        execute_per_config(rig, dev, configs, study, profile.disk_size, session)
    assert session.published is not None
    return session.published
