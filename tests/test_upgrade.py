"""Older run formats are upgraded on load, in one place (record.upgrade): the format-2 manifests of the committed
runs become format 3 with what they ran with, format 3 becomes 4 (each study's scale nested in its parameters) and
format 4 becomes 5 (the part a run measured: none); a run too old to upgrade is refused in one line."""
import copy
import json
import math

import pytest

from snaptax.fio import FioJob
from snaptax.plan import Measure
from snaptax.record import RECORD_VERSION, RecordError, RunRecord, upgrade
from snaptax.record.upgrade import LAST_READER
from tests.synthetic import fio_result, write_run

JOB = FioJob("j", "randrw", runtime_s=1)


def _v2(tmp_path, study="unit", **fields):
    """A run written today, its manifest turned back into format 2 as runs of 2026-11-25 wrote it."""
    run = write_run(tmp_path, study, "smoke", {}, [("v", 0, Measure(JOB, "create"), 0)],
                    lambda *a: (fio_result("randrw", 1, 1), {}, {}, {}))
    man = json.loads((run / "manifest.json").read_text())
    man["format_version"] = 2
    for name in ("emulator_version", "lock_wait_s", "planned_points", "planned_seconds"):
        man.pop(name)
    man["profile"]["max_chain"] = 5
    man.update(fields)
    (run / "manifest.json").write_text(json.dumps(man))
    return run, man


def test_a_format_2_run_reads_as_the_current_format_with_what_it_ran_with(tmp_path):
    run, man = _v2(tmp_path, emulated=True)
    before = copy.deepcopy(man)
    m = RunRecord.load(run).manifest
    assert m.format_version == RECORD_VERSION == 5
    assert m.lock_wait_s == 0.0 and m.planned_seconds == 0.0 and m.planned_points == 0
    assert m.emulator_version == 1                      # every format-2 run predates the flush fix
    assert json.loads((run / "manifest.json").read_text()) == before     # the raw run is not rewritten
    up = upgrade(before, run)
    assert "max_chain" not in up["profile"] and before["profile"]["max_chain"] == 5 and before["format_version"] == 2


def test_a_study_s_parameters_get_what_its_older_runs_ran_with_and_retired_ones_go(tmp_path):
    run, man = _v2(tmp_path, study="memory_dump", parameters={"x": 1})
    assert upgrade(man, run)["parameters"] == {"x": 1, "guest": None}
    run, man = _v2(tmp_path / "t", study="tiering", parameters={"guest_learn_s": 3.0, "lvmthin": False},
                   events=[])
    params = upgrade(man, run)["parameters"]
    scale = params["scale"]
    assert "guest_learn_s" not in params and scale["span_model_ios"] == 6000 and math.isnan(scale["guest_segment_s"])


def test_a_tiering_run_from_before_the_learning_gate_is_refused_naming_the_last_reader(tmp_path):
    run, man = _v2(tmp_path, study="tiering", parameters={"lvmthin": True}, events=[])
    with pytest.raises(RecordError, match=f"before the learning gate.*{LAST_READER}"):
        upgrade(man, run)


def test_a_current_run_records_every_field_and_an_unknown_format_is_refused(tmp_path):
    run = write_run(tmp_path, "unit", "smoke", {}, [("v", 0, Measure(JOB, "create"), 0)],
                    lambda *a: (fio_result("randrw", 1, 1), {}, {}, {}))
    man = json.loads((run / "manifest.json").read_text())
    assert man["format_version"] == 5 and man["emulator_version"] is None and "lock_wait_s" in man
    assert man["part"] is None                          # a whole run: it measured all of its study
    with pytest.raises(RecordError, match="not a snaptax run record"):
        upgrade({**man, "format": "other"}, run)


def _v3(tmp_path, study, parameters, profile="quick"):
    """A run written today, its manifest turned back into format 3 with the study's parameters as format 3 had
    them (the scale's fields among the others)."""
    run = write_run(tmp_path, study, profile, parameters, [("v", 0, Measure(JOB, "create"), 0)],
                    lambda *a: (fio_result("randrw", 1, 1), {}, {}, {}))
    man = json.loads((run / "manifest.json").read_text())
    man["format_version"] = 3
    return run, man


def test_format_3_nests_each_study_s_scale_and_rebuilds_what_it_did_not_record(tmp_path):
    from snaptax import profiles
    from snaptax.studies.calibration import plan as calibration
    from snaptax.studies.chain_bulk import plan as chain_bulk
    from snaptax.studies.memory_dump import plan as memory_dump

    made = iter(range(100))

    def upgraded(study, flat, profile="quick"):
        run, man = _v3(tmp_path / f"{study}-{profile}-{next(made)}", study, flat, profile)
        return upgrade(man, run)["parameters"]

    quick = profiles.get("quick")
    bulk = upgraded("chain_bulk", {"device": "ssd", "max_chain": 4, "runtime_s": 3, "ramp_time_s": 1,
                                   "block_bytes": 1, "repeats": 2, "disk_bytes": 1})
    assert bulk["scale"] == {"max_chain": 4, "runtime_s": 3, "ramp_time_s": 1, "warmup": True, "replicates": 1}
    # the quick scale of those runs (one replicate of the profile's pairs at every length), not today's
    assert chain_bulk.ChainBulkParameters.from_json(bulk, "test").scale == chain_bulk.BulkScale(4, 3, 1)
    assert upgraded("chain_bulk", {"max_chain": 3}, "smoke")["scale"]["warmup"] is False
    cal = upgraded("calibration", {"depths": [1, 4, 16, 32], "spans": [0.003, 0.01, 0.03, 0.1, 0.3, 1.0],
                                   "reads_double_iodepth": 4, "span_runtime_s": 10.0})
    assert cal["scale"]["span_runtime_factor"] == 2.0 and cal["span_runtime_s"] == 10.0
    assert cal["scale"]["span_runtime_factor"] == calibration.scale(quick).span_runtime_factor
    meta = upgraded("metadata_cache", {"pairs": 4, "runtime_s": 4, "coverage": {"cover-1-1": 1.0, "cover-1-8": 0.13,
                                                                                 "cover-15-16": 0.94}})
    assert meta["scale"] == {"pairs": 4, "runtime_s": 4, "coverages": ["1/8", "15/16", "1"], "read_coverages": [],
                             "read_runtime_s": 1.0}
    assert "pairs" not in meta and meta["coverage"]["cover-1-8"] == 0.13
    guest = {"memory_mib": 384, "fill_mib": 200, "repeats": 3, "dirty_pages_s": 1, "baseline_s": 1.0,
             "background": True, "precopy_points": [[2048, 2.0], [256, 25]], "bandwidth_role": "ssd",
             "nominal_ssd": [0.0005, 1.0]}
    dump = upgraded("memory_dump", {"memory_bytes": 1, "repeats": 2, "tuned_repeats": 8, "block_pages": [64],
                                    "waits_ms": [0], "guest": guest})
    assert dump["guest"]["scale"] == {"memory_mib": 384, "repeats": 3, "background": True, "precopy_points": [
        {"block_pages": 2048, "wait_ms": 2.0}, {"block_pages": 256, "wait_ms": 25}]}
    assert memory_dump.GuestParameters.from_json(dump["guest"], "test").scale == memory_dump.guest_scale(quick)
    assert upgraded("memory_dump", {"guest": None}) == {"guest": None}      # nothing of a scale: left as it was


def test_a_scale_field_added_later_gets_what_older_runs_ran_with(tmp_path):
    """chain_length's and db_snapshots' replicates (1) and memory_dump's extra replicates (0), for a run recorded
    before they existed; a run that records them keeps its own."""
    run = write_run(tmp_path, "chain_length", "quick", {"scale": {"pairs": 8}}, [("v", 0, Measure(JOB, "create"), 0)],
                    lambda *a: (fio_result("randrw", 1, 1), {}, {}, {}))
    man = json.loads((run / "manifest.json").read_text())
    assert upgrade(man, run)["parameters"]["scale"] == {"pairs": 8, "replicates": 1}
    man["parameters"]["scale"]["replicates"] = 3
    assert upgrade(man, run)["parameters"]["scale"]["replicates"] == 3
    assert "replicates" not in man["parameters"]["scale"] or man["parameters"]["scale"]["replicates"] == 3
    man["study"] = "memory_dump"
    del man["parameters"]["scale"]["replicates"]
    assert upgrade(man, run)["parameters"]["scale"]["extra_replicates"] == 0


def test_a_format_4_run_measured_its_study_whole(tmp_path):
    """Format 5 records the part of a study a run measured (record.parts); every run before it measured the whole."""
    run = write_run(tmp_path, "unit", "smoke", {}, [("v", 0, Measure(JOB, "create"), 0)],
                    lambda *a: (fio_result("randrw", 1, 1), {}, {}, {}))
    man = json.loads((run / "manifest.json").read_text())
    man["format_version"] = 4
    man.pop("part")
    (run / "manifest.json").write_text(json.dumps(man))
    m = RunRecord.load(run).manifest
    assert m.format_version == 5 and m.part is None
    assert "part" not in json.loads((run / "manifest.json").read_text())      # the raw run is not rewritten
    with pytest.raises(RecordError, match="manifest field missing or malformed"):   # format 5 must say it
        RunRecord.load(_without_part(run))


def _without_part(run):
    man = json.loads((run / "manifest.json").read_text())
    man["format_version"] = 5
    man.pop("part", None)
    (run / "manifest.json").write_text(json.dumps(man))
    return run
