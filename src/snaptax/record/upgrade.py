"""Runs of older formats, upgraded to the current one when they are read: the one place that knows old formats.

RunRecord.load passes every manifest through upgrade() before typing it, so no analysis ever branches on a run's
format or the date it was made. A run too old to be upgraded (a fact its analysis needs was not recorded and cannot
be rebuilt from what was) is refused in one line naming the last commit that read it.

Format 2 (runs of 2026-11-22 to 2026-11-28) → 3:
- lock_wait_s, planned_points, planned_seconds: what a run that lacks them ran with (no lock wait recorded, its
  start includes any wait; no prediction: 0).
- profile: `max_chain` is dropped (it moved into the chain-length study's own scale; the run's parameters keep it).
- registration: None (the first pre-registration came with format 3).
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

Format 3 → 4:
- a study's parameters hold its scale (the plan's <Study>Scale) as the object `scale`, where format 3 had the scale's
  fields among the others (SCALE_FIELDS); engines' already did. The scale's fields format 3 did not record are
  rebuilt from what it did: chain_bulk's warmup (off at smoke only, since the study began), calibration's
  span_runtime_factor (its span_runtime_s over the profile's runtime), metadata_cache's coverages (its variants,
  named cover-<p>-<q> after them), and the memory_dump guest phase's walker points as records, not pairs.

Format 4 → 5:
- part: None (a whole run). Format 5 records the part of the study a run measured (issue 49.1: a study too long for
  one measuring window is measured in parts, record.parts); every run before it measured its study whole.

Format 4 and later, fields a study's scale gained later (SCALE_FIELDS_ADDED, filled in for any run that lacks them,
with the value the runs before them ran with): the independent replicates of 2026-11-28 evening — chain_length's and
db_snapshots' and chain_bulk's `replicates` (1: every variant once, on one engine) and memory_dump's
`extra_replicates` (0); metadata_cache's read job (`read_coverages` none, `read_runtime_s` unused); calibration's
coverage sweep (`reads_double_sweep` none); tiering's `replicates` (1: one qcow2 timeline per pool, the runs before
2026-11-29's replicates) and its `coverage_sweep` (none: the runs before 2026-12-01's sweep on the SAS-only pool).
"""
from __future__ import annotations

import copy
import math
from fractions import Fraction
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
# study -> the fields of its scale that format 3 kept among its parameters (format 4: under `scale`)
SCALE_FIELDS: dict[str, tuple[str, ...]] = {
    "calibration": ("depths", "spans", "reads_double_iodepth"),
    "chain_bulk": ("max_chain", "runtime_s", "ramp_time_s"),
    "chain_length": ("pairs", "max_chain", "runtime_s", "ramp_time_s", "pairs_basis"),
    "db_snapshots": ("table_bytes", "repeats", "ssd_repeats"),
    "lifecycle": ("file_bytes", "disk_bytes", "steady_s", "delete_window_s", "light_steady_s", "grid_rates",
                  "grid_window_s", "max_iterations"),
    "memory_dump": ("memory_bytes", "repeats", "tuned_repeats", "block_pages", "waits_ms"),
    "metadata_cache": ("pairs", "runtime_s"),
    "tiering": ("disk_bytes", "phase_s", "settle_s", "with_s", "delete_window_s", "learn_segment_s", "learn_limit_s",
                "relearn_limit_s", "learned_fraction", "untiered_factor", "guest_segment_s", "span_model_ios"),
}
# study -> scale field -> the value runs recorded before the field existed ran with (format 4 and earlier)
SCALE_FIELDS_ADDED: dict[str, dict[str, Any]] = {
    "chain_length": {"replicates": 1},
    "db_snapshots": {"replicates": 1},
    "memory_dump": {"extra_replicates": 0},
    "chain_bulk": {"replicates": 1},
    # the runs before the tiering study's replicates (issue 47.3, 2026-11-29) measured one qcow2 timeline per pool, and
    # those before its coverage sweep (issue 46.4, 2026-12-01) none
    "tiering": {"replicates": 1, "coverage_sweep": []},
    # the runs before the read job measured seed 001's random job only
    "metadata_cache": {"read_coverages": [], "read_runtime_s": 1.0},
    # the runs before seed 000's coverage sweep read the overlay at its one coverage
    "calibration": {"reads_double_sweep": []},
}
# the memory_dump guest phase's scale fields among its guest parameters in format 3
GUEST_SCALE_FIELDS = ("memory_mib", "repeats", "precopy_points", "background")
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
    if version == 3:
        d = _from_3(d)
        version = 4
    if version == 4:
        d = _from_4(d)
        version = 5
    if version != RECORD_VERSION:
        raise RecordError(f"{where}: run record version {d.get('format_version')!r} is not one this snaptax reads "
                          f"(2 to {RECORD_VERSION})")
    _scale_fields_added(d)
    return d


def _scale_fields_added(d: dict[str, Any]) -> None:
    """The scale fields a study gained after a run was recorded, with the values that run ran with."""
    scale = d.get("parameters", {}).get("scale") if isinstance(d.get("parameters"), dict) else None
    if isinstance(scale, dict):
        for name, value in SCALE_FIELDS_ADDED.get(d.get("study", ""), {}).items():
            scale.setdefault(name, value)


def _from_2(d: dict[str, Any], where: Path) -> dict[str, Any]:
    d.setdefault("lock_wait_s", 0.0)
    d.setdefault("planned_points", 0)
    d.setdefault("planned_seconds", 0.0)
    d["profile"] = {k: v for k, v in d["profile"].items() if k not in RETIRED_PROFILE_FIELDS}
    d["emulator_version"] = 1 if d.get("emulated") else None
    d["registration"] = None           # every run of format 2 predates the first pre-registration
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


def _from_3(d: dict[str, Any]) -> dict[str, Any]:
    study = d.get("study", "")
    params = d.get("parameters")
    if isinstance(params, dict):
        _nest_scale(params, SCALE_FIELDS.get(study, ()))
        scale = params.get("scale")
        if isinstance(scale, dict):
            if study == "chain_bulk":
                scale.setdefault("warmup", d["profile"]["name"] != "smoke")
            elif study == "calibration" and "span_runtime_s" in params:
                scale.setdefault("span_runtime_factor", params["span_runtime_s"] / d["profile"]["runtime_s"])
            elif study == "metadata_cache":
                scale.setdefault("coverages", sorted((_coverage(v) for v in params.get("coverage", {})),
                                                     key=Fraction))
        guest = params.get("guest") if study == "memory_dump" else None
        if isinstance(guest, dict):
            if "precopy_points" in guest:
                guest["precopy_points"] = [{"block_pages": b, "wait_ms": w} for b, w in guest["precopy_points"]]
            _nest_scale(guest, GUEST_SCALE_FIELDS)
    d["format_version"] = 4
    return d


def _from_4(d: dict[str, Any]) -> dict[str, Any]:
    d["part"] = None          # every run before format 5 measured its study whole
    d["format_version"] = 5
    return d


def _nest_scale(params: dict[str, Any], fields: tuple[str, ...]) -> None:
    """Move the scale's `fields` of a format-3 record into its `scale` object (nothing to move: left as it is)."""
    moved = {name: params.pop(name) for name in fields if name in params}
    if moved:
        params["scale"] = moved


def _coverage(variant: str) -> str:
    """A metadata_cache variant's coverage as the scale writes it ('7/8'), from its name ('cover-7-8')."""
    _, p, q = variant.split("-")
    return str(Fraction(int(p), int(q)))


__all__ = ["upgrade", "LAST_READER", "STUDY_PARAMETERS_ADDED", "STUDY_PARAMETERS_RETIRED", "SCALE_FIELDS",
           "SCALE_FIELDS_ADDED"]
