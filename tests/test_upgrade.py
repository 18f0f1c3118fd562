"""Older run formats are upgraded on load, in one place (record.upgrade): the format-2 manifests of the committed
runs become format 3 with what they ran with; a run too old to upgrade is refused in one line."""
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


def test_a_format_2_run_reads_as_format_3_with_what_it_ran_with(tmp_path):
    run, man = _v2(tmp_path, emulated=True)
    before = copy.deepcopy(man)
    m = RunRecord.load(run).manifest
    assert m.format_version == RECORD_VERSION == 3
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
    assert "guest_learn_s" not in params and params["span_model_ios"] == 6000 and math.isnan(params["guest_segment_s"])


def test_a_tiering_run_from_before_the_learning_gate_is_refused_naming_the_last_reader(tmp_path):
    run, man = _v2(tmp_path, study="tiering", parameters={"lvmthin": True}, events=[])
    with pytest.raises(RecordError, match=f"before the learning gate.*{LAST_READER}"):
        upgrade(man, run)


def test_a_current_run_records_every_field_and_an_unknown_format_is_refused(tmp_path):
    run = write_run(tmp_path, "unit", "smoke", {}, [("v", 0, Measure(JOB, "create"), 0)],
                    lambda *a: (fio_result("randrw", 1, 1), {}, {}, {}))
    man = json.loads((run / "manifest.json").read_text())
    assert man["format_version"] == 3 and man["emulator_version"] is None and "lock_wait_s" in man
    with pytest.raises(RecordError, match="not a snaptax run record"):
        upgrade({**man, "format": "other"}, run)
