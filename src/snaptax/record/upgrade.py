"""Runs of older formats, upgraded to the current one when they are read: the one place that knows old formats.

RunRecord.load passes every manifest through upgrade() before typing it, so no analysis ever branches on a run's
format or the date it was made. A run too old to be upgraded (a fact its analysis needs was not recorded and cannot
be rebuilt from what was) is refused in one line naming the last commit that read it.

Format 2 (runs of 2026-11-22 to 2026-11-28) → 3:
- lock_wait_s, planned_points, planned_seconds: what a run that lacks them ran with (no lock wait recorded, its
  start includes any wait; no prediction: 0).
- profile: `max_chain` is dropped (it moved into the chain-length study's own scale; the run's parameters keep it).
- emulator_version: 1 for a run that measured an emulated device, None otherwise. Every run of format 2 predates the
  emulator's flush fix (commit 9f03b4ac1): checked over every run in the repository's history when format 3 was
  introduced (the newest emulated run of format 2 started at 2026-11-27T11:08Z, the fix was committed at 13:57Z).
- parameters a study recorded only later get the values its older runs ran with (STUDY_PARAMETERS_ADDED), and
  parameters it no longer records are dropped (STUDY_PARAMETERS_RETIRED).
- tiering: the pools' device specs, recorded in the variants since 2026-11-26, are read for older runs from the rig
  files the way they were then (rigfiles.parse_device); the span model's seeds, recorded since 2026-11-26, are the
  plan's as they were then (TIERING_SPAN_MODEL_SEEDS_BEFORE_RECORDED, unchanged since the span model was
  introduced). A run made before the learning gate (no learn_done / relearn_done events) is refused: its learning
  verdict was a rule applied by the analysis, not a recorded fact.
"""
from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from .schema import RECORD_FORMAT, RECORD_VERSION, RecordError

# the commit whose analysis last read the runs this module refuses
LAST_READER = "26216ce2"

# parameter -> the value a study's runs of format 2 ran with while they did not record it
STUDY_PARAMETERS_ADDED: dict[str, dict[str, Any]] = {
    # the runs of 2026-11-24 and 2026-11-25 were made before the LVM thin variants: no guest segments (the paper's
    # value stays undefined, as before) and no lvmthin flag (they measured none); runs before 2026-11-27 ran
    # measure.span_model with 6000 requests
    "tiering": {"guest_segment_s": math.nan, "lvmthin": False, "span_model_ios": 6000},
    # the runs of 2026-11-23 were made before the guest phase existed
    "memory_dump": {"guest": None},
}
# parameters older runs recorded that today's plans no longer write
STUDY_PARAMETERS_RETIRED: dict[str, tuple[str, ...]] = {
    # the runs of 2026-11-26 up to 12:35: the LVM thin guest's fixed learning time, before learning was ended by the
    # host's rule (measure.LearningGate)
    "tiering": ("guest_learn_s",),
}
RETIRED_PROFILE_FIELDS = ("max_chain",)
# the tiering plan's span-model seeds (plan.SPAN_MODEL_SEEDS) as they were from the span model's introduction
# (commit 0b716df4c, 2026-11-26) until its runs recorded them: a fact about those runs, so written here rather than
# read from today's plan, which may change (and which this module, below every study, does not import)
TIERING_SPAN_MODEL_SEEDS_BEFORE_RECORDED = (1, 2, 3, 4, 5)


def upgrade(d: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The manifest `d` of the run in `run_dir` in the current format (a copy; `d` is left as it is). Raises
    RecordError for an unknown format or version, or a run too old to upgrade."""
    where = run_dir / "manifest.json"
    if d.get("format") != RECORD_FORMAT:
        raise RecordError(f"{where}: not a snaptax run record (format {d.get('format')!r})")
    d = copy.deepcopy(d)
    version = d.get("format_version")
    if version == 2:
        d = _from_2(d, where)
        version = 3
    if version != RECORD_VERSION:
        raise RecordError(f"{where}: run record version {d.get('format_version')!r} is not one this snaptax reads "
                          f"(2 to {RECORD_VERSION})")
    return d


def _from_2(d: dict[str, Any], where: Path) -> dict[str, Any]:
    d.setdefault("lock_wait_s", 0.0)
    d.setdefault("planned_points", 0)
    d.setdefault("planned_seconds", 0.0)
    d["profile"] = {k: v for k, v in d["profile"].items() if k not in RETIRED_PROFILE_FIELDS}
    d["emulator_version"] = 1 if d.get("emulated") else None
    study = d.get("study", "")
    params = d.get("parameters", {})
    if isinstance(params, dict):
        for name, value in STUDY_PARAMETERS_ADDED.get(study, {}).items():
            params.setdefault(name, value)
        for name in STUDY_PARAMETERS_RETIRED.get(study, ()):
            params.pop(name, None)
    if study == "tiering":
        _tiering_from_2(d, where)
    d["format_version"] = 3
    return d


def _tiering_from_2(d: dict[str, Any], where: Path) -> None:
    from ..spindle.profiles import to_json
    from ..spindle.rigfiles import parse_device

    recorded = {dev.get("name"): dev for dev in d.get("devices", [])}
    pools = d.get("parameters", {}).get("devices", {})
    for variant, meta in d.get("variants", {}).items():
        study = meta.setdefault("study", {})
        pool = variant.split(".")[0]
        dev = recorded.get(str(pools.get(pool, pool))) or {}
        if not (meta.get("spec") or study.get("spec")) and dev.get("spindle"):
            name = dev.get("name")
            study["spec"] = to_json(parse_device(dev["spindle"], d.get("rig_file") or d.get("rig", ""),
                                                 f"devices.{name}.spindle"))
        curve = study.get("span_model")
        if curve and not curve.get("seeds"):
            curve["seeds"] = list(TIERING_SPAN_MODEL_SEEDS_BEFORE_RECORDED)
    events = {e.get("event") for e in d.get("events", [])}
    learned = {"learn_done", "relearn_done"} & events
    if d.get("parameters", {}).get("lvmthin") and not learned:
        raise RecordError(f"{where}: a tiering run made before the learning gate (2026-11-26) records no learning "
                          f"verdict; this snaptax cannot analyse it (snaptax at commit {LAST_READER} could)")


__all__ = ["upgrade", "LAST_READER", "STUDY_PARAMETERS_ADDED", "STUDY_PARAMETERS_RETIRED"]
