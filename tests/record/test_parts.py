"""A study measured in parts (record.parts): a complete set of part runs of one code and conditions reads as the whole
run would; an incomplete set, and parts of different code or conditions, are never read (and never an error)."""
import json

import pandas as pd
import pytest

from snaptax import fio, paths, profiles, studies
from snaptax.plan import Measure
from snaptax.record import (
    CombinedRecord,
    PartSet,
    RecordError,
    RunPart,
    RunRecord,
    RunWriter,
    incomplete_sets,
    load_run,
    readable_runs,
    short_run_id,
)
from tests.synthetic import fio_result, rig

STUDY = "chain_bulk"      # a study with parts; the records here are synthetic, its analysis is not run
# parts of one configuration with all its replicates, as parts were measured before they were one replicate each:
# such sets stay readable (a set is what its parts' manifests declare)
SET = ("on-disk-metadata", "in-memory-metadata")
# parts of one configuration in one replicate (plan.replicate_parts), as chain_length and chain_bulk measure them now
REPLICATE_SET = ("on-disk-metadata.r0", "in-memory-metadata.r0", "on-disk-metadata.r1", "in-memory-metadata.r1")
JOB = fio.FioJob("read512k", "read", runtime_s=1)
# variant -> the plan's points of that variant: (index, phase, chain length, read IOPS)
POINTS = {
    "on-disk-metadata": [(0, "read", 0, 100.0), (1, "read-flat", 0, 110.0), (3, "read", 1, 70.0)],
    "in-memory-metadata": [(0, "read", 0, 200.0), (1, "read-flat", 0, 190.0), (3, "read", 1, 180.0)],
    "on-disk-metadata@r1": [(0, "read", 0, 105.0), (1, "read-flat", 0, 112.0), (3, "read", 1, 72.0)],
    "in-memory-metadata@r1": [(0, "read", 0, 210.0), (1, "read-flat", 0, 200.0), (3, "read", 1, 185.0)],
}


def publish(tmp_path, run_id, variants, part=None, commit="a" * 40, parameters=None, planned_s=10.0, of=SET):
    """A synthetic run of STUDY into the data directory (SNAPTAX_DATA_DIR: the data_dir fixture) holding `variants`'
    points of POINTS, measured with `commit`; `part`: the part name it measured (of the set `of`), None for a whole
    run."""
    w = RunWriter(rig(tmp_path), STUDY, profiles.get("quick"), parameters or {"scale": {"replicates": 2}},
                  tmp_path / "staging" / run_id, planned_points=3 * len(variants), planned_seconds=planned_s,
                  run_id=run_id, part=RunPart(part, of) if part else None)
    w.provenance = {"git": {"commit": commit, "dirty": False}, "host": {"cpu": "test"}}
    for variant in variants:
        with w.in_variant(variant, {"engine": "qcow2", "config": {"name": variant}}):
            for index, phase, chain, iops in POINTS[variant]:
                step = Measure(JOB, phase)
                d = w.measurement_dir(index, step)
                (d / "fio.json").write_text("{}")
                w.record_measurement(index, step, chain_length=chain, fio_run=fio.FioRun(d, fio_result(
                    JOB.name, read_iops=iops), 1.0), counters_before={"host.reads": 0.0},
                    counters_after={"host.reads": iops * 2}, extra={"iops": iops})
    return w.publish(paths.study_dir("t", STUDY) / run_id)


def edit_manifest(run, **fields):
    """The run's manifest with `fields` replaced (a recorded fact the writer does not let a test choose)."""
    man = json.loads((run / "manifest.json").read_text())
    man.update(fields)
    (run / "manifest.json").write_text(json.dumps(man))
    return run


def measured_between(run, started, finished):
    """The run's manifest as if it had measured from `started` to `finished` (UTC)."""
    return edit_manifest(run, started_utc=started, finished_utc=finished)


def whole_and_parts(tmp_path):
    whole = publish(tmp_path, "20260101T000000Z-quick", list(POINTS))
    disk = measured_between(publish(tmp_path, "20260102T000000Z-quick-on-disk-metadata",
                                    ["on-disk-metadata", "on-disk-metadata@r1"], part="on-disk-metadata",
                                    planned_s=6.0), "2026-01-02T00:00:00Z", "2026-01-02T00:10:00Z")
    memory = measured_between(publish(tmp_path, "20260102T030000Z-quick-in-memory-metadata",
                                      ["in-memory-metadata", "in-memory-metadata@r1"], part="in-memory-metadata",
                                      planned_s=4.0), "2026-01-02T03:00:00Z", "2026-01-02T03:05:00Z")
    return whole, disk, memory


def _sorted(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    return df.sort_values(by).reset_index(drop=True)


def test_a_complete_set_reads_as_the_whole_run_measured_in_one_session(data_dir, tmp_path):
    whole, disk, memory = whole_and_parts(tmp_path)
    runs = readable_runs("t", STUDY, "quick")
    assert runs == [whole, PartSet((disk, memory))]        # the set is newer: its last part was measured after
    one, parted = RunRecord.load(whole), load_run(runs[-1])
    assert isinstance(parted, CombinedRecord)
    key = ["variant", "index"]
    assert [(m.variant, m.index, m.iops(), m.delta("host.reads"), m.extra) for m in parted.measurements] == \
        [(m.variant, m.index, m.iops(), m.delta("host.reads"), m.extra) for m in one.measurements]
    pd.testing.assert_frame_equal(_sorted(parted.per_measurement(counters=("host.reads",)), key),
                                  _sorted(one.per_measurement(counters=("host.reads",)), key))
    pd.testing.assert_frame_equal(_sorted(parted.counters(), [*key, "counter"]),
                                  _sorted(one.counters(), [*key, "counter"]))
    a, b = _sorted(parted.results(), key), _sorted(one.results(), key)
    pd.testing.assert_frame_equal(a.drop(columns="path"), b.drop(columns="path"))
    # each row's measurement directory in its part, found the way an analysis joins it (record.path / row.path)
    assert {(parted.path / p).resolve() for p in a.path} == \
        {(r / p).resolve() for r in (disk, memory) for p in RunRecord.load(r).results().path}
    assert all((parted.path / p / "measurement.json").is_file() for p in a.path)
    assert parted.variant_dir("in-memory-metadata@r1") == memory / "measurements" / "in-memory-metadata-r1"
    assert parted.variant_dir("in-memory-metadata@r1").is_dir()
    pd.testing.assert_frame_equal(parted.lateness(), one.lateness())
    m = parted.manifest
    assert m.run_id == f"{disk.name}+{memory.name}" and parted.run_id == m.run_id
    assert m.variants == one.manifest.variants and m.parameters == one.manifest.parameters
    assert (m.measurements, m.planned_points, m.planned_seconds) == (12, 12, 10.0)
    assert m.part is None and [p.part.name for p in m.parts if p.part] == list(SET)
    # measured time: the parts' own (10 + 5 min), not the hours between their two windows
    assert (m.started_utc, m.finished_utc) == ("2026-01-02T00:00:00Z", "2026-01-02T03:05:00Z")
    assert m.measured_seconds() == 900.0


def test_the_newest_run_of_a_study_is_the_newer_of_its_newest_whole_run_and_its_newest_complete_set(data_dir,
                                                                                                   tmp_path):
    whole, disk, memory = whole_and_parts(tmp_path)
    study = studies.get(STUDY)
    assert study.newest_run("t", "quick") == PartSet((disk, memory))
    later = publish(tmp_path, "20260103T000000Z-quick", list(POINTS))
    assert study.newest_run("t", "quick") == later
    # a later run of one part of the same code replaces the earlier one in the set
    again = publish(tmp_path, "20260104T000000Z-quick-on-disk-metadata", ["on-disk-metadata", "on-disk-metadata@r1"],
                    part="on-disk-metadata")
    assert study.newest_run("t", "quick") == PartSet((again, memory))
    assert isinstance(study.open("t", "quick"), CombinedRecord)


def test_an_incomplete_set_is_never_read(data_dir, tmp_path):
    disk = publish(tmp_path, "20260102T000000Z-quick-on-disk-metadata", ["on-disk-metadata", "on-disk-metadata@r1"],
                   part="on-disk-metadata")
    assert readable_runs("t", STUDY, "quick") == []
    with pytest.raises(studies.NoPublishedRun):
        studies.get(STUDY).newest_run("t", "quick")
    (gap,) = incomplete_sets("t", STUDY, "quick")
    assert gap.have == {"on-disk-metadata": disk} and gap.missing == ("in-memory-metadata",)
    assert "lacks in-memory-metadata" in gap.line()
    whole = publish(tmp_path, "20260101T000000Z-quick", list(POINTS))
    assert studies.get(STUDY).newest_run("t", "quick") == whole      # older, but the only readable run


def test_parts_measured_by_different_code_are_not_combined(data_dir, tmp_path):
    publish(tmp_path, "20260102T000000Z-quick-on-disk-metadata", ["on-disk-metadata", "on-disk-metadata@r1"],
            part="on-disk-metadata", commit="a" * 40)
    publish(tmp_path, "20260102T030000Z-quick-in-memory-metadata", ["in-memory-metadata", "in-memory-metadata@r1"],
            part="in-memory-metadata", commit="b" * 40)
    assert readable_runs("t", STUDY, "quick") == []
    assert sorted(g.missing for g in incomplete_sets("t", STUDY, "quick")) == [("in-memory-metadata",),
                                                                               ("on-disk-metadata",)]


def test_parts_of_one_commit_with_different_uncommitted_changes_are_not_combined(data_dir, tmp_path):
    from snaptax import provenance

    disk = publish(tmp_path, "20260102T000000Z-quick-on-disk-metadata", ["on-disk-metadata", "on-disk-metadata@r1"],
                   part="on-disk-metadata")
    memory = publish(tmp_path, "20260102T030000Z-quick-in-memory-metadata",
                     ["in-memory-metadata", "in-memory-metadata@r1"], part="in-memory-metadata")
    assert readable_runs("t", STUDY, "quick") == [PartSet((disk, memory))]
    (disk / provenance.UNCOMMITTED_DIFF).write_text("+a = 1\n")
    assert readable_runs("t", STUDY, "quick") == []
    (memory / provenance.UNCOMMITTED_DIFF).write_text("+a = 1\n")        # the same changes: the same code
    assert readable_runs("t", STUDY, "quick") == [PartSet((disk, memory))]


def test_parts_measured_under_other_parameters_are_other_sets_never_combined_and_never_an_error(data_dir, tmp_path):
    disk = publish(tmp_path, "20260102T000000Z-quick-on-disk-metadata", ["on-disk-metadata", "on-disk-metadata@r1"],
                   part="on-disk-metadata")
    memory = publish(tmp_path, "20260102T030000Z-quick-in-memory-metadata",
                     ["in-memory-metadata", "in-memory-metadata@r1"], part="in-memory-metadata",
                     parameters={"scale": {"replicates": 3}})
    # every reader: nothing to read, two sets that each lack the other's part
    assert readable_runs("t", STUDY, "quick") == []
    with pytest.raises(studies.NoPublishedRun):
        studies.get(STUDY).newest_run("t", "quick")
    gaps = incomplete_sets("t", STUDY, "quick")
    assert sorted((tuple(g.have.values()), g.missing) for g in gaps) == [((disk,), ("in-memory-metadata",)),
                                                                        ((memory,), ("on-disk-metadata",))]
    assert gaps[0].code == gaps[1].code and gaps[0].conditions != gaps[1].conditions
    assert all(f"conditions {g.conditions}" in g.line() for g in gaps)
    # a set put together by hand is refused in one line naming what differs
    with pytest.raises(RecordError, match="the parts differ in parameters"):
        load_run(PartSet((disk, memory)))
    # the part measured again under the first part's parameters completes that set
    again = publish(tmp_path, "20260103T000000Z-quick-in-memory-metadata",
                    ["in-memory-metadata", "in-memory-metadata@r1"], part="in-memory-metadata")
    assert readable_runs("t", STUDY, "quick") == [PartSet((disk, again))]
    assert [(tuple(g.have.values()), g.missing) for g in incomplete_sets("t", STUDY, "quick")] == \
        [((memory,), ("on-disk-metadata",))]


@pytest.mark.parametrize("field,first,second", [
    ("emulator_version", 2, 3),
    ("registration", {"file": "a.yaml", "sha256": "1"}, {"file": "b.yaml", "sha256": "2"}),
    ("provenance", {"git": {"commit": "a" * 40}, "tools": {"fio": "fio-3.33"}},
     {"git": {"commit": "a" * 40}, "tools": {"fio": "fio-3.36"}}),
])
def test_parts_measured_by_another_emulator_registration_or_tool_are_other_sets(data_dir, tmp_path, field, first,
                                                                                  second):
    disk = edit_manifest(publish(tmp_path, "20260102T000000Z-quick-on-disk-metadata",
                                 ["on-disk-metadata", "on-disk-metadata@r1"], part="on-disk-metadata"),
                         **{field: first})
    memory = edit_manifest(publish(tmp_path, "20260102T030000Z-quick-in-memory-metadata",
                                   ["in-memory-metadata", "in-memory-metadata@r1"], part="in-memory-metadata"),
                           **{field: second})
    assert readable_runs("t", STUDY, "quick") == [] and len(incomplete_sets("t", STUDY, "quick")) == 2
    with pytest.raises(RecordError, match="the parts differ in"):
        load_run(PartSet((disk, memory)))
    edit_manifest(memory, **{field: first})
    assert readable_runs("t", STUDY, "quick") == [PartSet((disk, memory))]


def test_the_set_s_provenance_is_its_first_part_s_and_the_host_is_not_compared(data_dir, tmp_path):
    disk = edit_manifest(publish(tmp_path, "20260102T000000Z-quick-on-disk-metadata",
                                 ["on-disk-metadata", "on-disk-metadata@r1"], part="on-disk-metadata"),
                         provenance={"git": {"commit": "a" * 40}, "host": {"cpu": "AMD EPYC"}})
    memory = edit_manifest(publish(tmp_path, "20260102T030000Z-quick-in-memory-metadata",
                                   ["in-memory-metadata", "in-memory-metadata@r1"], part="in-memory-metadata"),
                           provenance={"git": {"commit": "a" * 40}, "host": {"cpu": "Intel Xeon"}})
    (ref,) = readable_runs("t", STUDY, "quick")
    assert ref == PartSet((disk, memory)) and load_run(ref).manifest.host_label == "AMD EPYC"


def test_parts_out_of_their_set_or_of_a_whole_run_are_refused(data_dir, tmp_path):
    disk = publish(tmp_path, "20260102T000000Z-quick-on-disk-metadata", ["on-disk-metadata", "on-disk-metadata@r1"],
                   part="on-disk-metadata")
    with pytest.raises(RecordError, match="not one run of each part of the set"):
        load_run(PartSet((disk,)))
    whole = publish(tmp_path, "20260101T000000Z-quick", list(POINTS))
    with pytest.raises(RecordError, match="measured the whole study, not a part"):
        load_run(PartSet((whole, disk)))


def test_a_set_of_one_configuration_in_one_replicate_per_part_reads_as_the_whole_run(data_dir, tmp_path):
    whole = publish(tmp_path, "20260101T000000Z-quick", list(POINTS))
    runs = [publish(tmp_path, f"2026010{k + 2}T000000Z-quick-{name}", [variant], part=name, of=REPLICATE_SET)
            for k, (name, variant) in enumerate(zip(REPLICATE_SET, ["on-disk-metadata", "in-memory-metadata",
                                                                    "on-disk-metadata@r1", "in-memory-metadata@r1"],
                                                    strict=True))]
    assert readable_runs("t", STUDY, "quick") == [whole, PartSet(tuple(runs))]
    one, parted = RunRecord.load(whole), load_run(PartSet(tuple(runs)))
    assert [(m.variant, m.index, m.iops()) for m in parted.measurements] == \
        [(m.variant, m.index, m.iops()) for m in one.measurements]
    key = ["variant", "index"]
    pd.testing.assert_frame_equal(_sorted(parted.per_measurement(counters=("host.reads",)), key),
                                  _sorted(one.per_measurement(counters=("host.reads",)), key))
    assert parted.manifest.variants == one.manifest.variants
    assert parted.run_id == "+".join(r.name for r in runs)
    assert short_run_id(parted.run_id) == "20260102T000000Z-quick (4 parts)"


def test_a_run_id_is_printed_whole_and_a_set_s_by_its_first_part_s_start_and_its_count():
    assert short_run_id("20260101T000000Z-quick") == "20260101T000000Z-quick"
    assert short_run_id("20260101T000000Z-full-on-disk-metadata.r0+20260102T000000Z-full-lvm-thin.r0") == \
        "20260101T000000Z-full (2 parts)"
    assert short_run_id("a+b+c") == "a (3 parts)"
    assert short_run_id("chain_bulk/a-quick-x.r0+b+c") == "chain_bulk/a-quick (3 parts)"


def test_a_study_s_json_beside_its_measurements_merges_only_where_no_choice_is_made(data_dir, tmp_path):
    _, disk, memory = whole_and_parts(tmp_path)
    parted = load_run(PartSet((disk, memory)))
    assert parted.extra_json("guest_dump.json") is None
    (disk / "same.json").write_text(json.dumps({"a": 1}))
    (memory / "same.json").write_text(json.dumps({"a": 1}))
    (disk / "apart.json").write_text(json.dumps({"a": 1}))
    (memory / "apart.json").write_text(json.dumps({"b": 2}))
    (disk / "clash.json").write_text(json.dumps({"a": 1}))
    (memory / "clash.json").write_text(json.dumps({"a": 2}))
    assert parted.extra_json("same.json") == {"a": 1}
    assert parted.extra_json("apart.json") == {"a": 1, "b": 2}
    with pytest.raises(RecordError, match="clash.json differs between the parts"):
        parted.extra_json("clash.json")


def test_a_part_records_its_name_and_set_and_a_whole_run_none(data_dir, tmp_path):
    whole, disk, _ = whole_and_parts(tmp_path)
    assert json.loads((disk / "manifest.json").read_text())["part"] == {"name": "on-disk-metadata", "set": list(SET)}
    assert RunRecord.load(disk).manifest.part == RunPart("on-disk-metadata", SET)
    assert json.loads((whole / "manifest.json").read_text())["part"] is None


def test_the_plan_of_a_study_says_which_sets_lack_a_part(data_dir, tmp_path):
    from snaptax import expect

    study, profile = studies.get(STUDY), profiles.get("quick")
    publish(tmp_path, "20260102T000000Z-quick-on-disk-metadata", ["on-disk-metadata", "on-disk-metadata@r1"],
            part="on-disk-metadata")
    lines = expect.part_lines(study, "t", profile)
    parts = study.parts(profile)
    assert parts == REPLICATE_SET + ("on-disk-metadata.r2", "in-memory-metadata.r2")       # quick: 3 replicates
    assert [line.split(":")[0].strip() for line in lines[1:1 + len(parts)]] == list(parts)
    assert all("plan's prediction" in line and " min" in line for line in lines[1:1 + len(parts)])
    assert any("incomplete set of parts" in line and "lacks in-memory-metadata" in line for line in lines)
    assert expect.part_lines(studies.get("tiering"), "t", profile) == []
