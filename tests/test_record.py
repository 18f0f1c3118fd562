"""Run records: published whole or not at all, in a versioned format, read back through one typed reader."""
import json

import pytest

from snaptax import fio, profiles
from snaptax.counters import UnknownCounter
from snaptax.host import rig as rigmod
from snaptax.plan import Measure
from snaptax.record import RECORD_VERSION, RecordError, RunRecord, RunSession, published_runs
from tests.synthetic import fio_result, write_run

JOB = fio.FioJob("randrw", "randrw", runtime_s=1)


def fake_run(directory, iops=100.0):
    directory.mkdir(parents=True, exist_ok=True)
    result = fio_result("randrw", iops, iops)
    (directory / "fio.json").write_text(json.dumps(result))
    return fio.FioRun(directory, result, 1.0)


def session():
    return RunSession(rigmod.load("local"), "unit", profiles.get("smoke"), {"p": 1})


def test_published_run_has_manifest_results_counters_and_measurements(data_dir, work_dir):
    with session() as s:
        with s.in_variant("v1", {"engine": "x"}):
            step = Measure(JOB, "create")
            d = s.measurement_dir(0, step)
            s.record_measurement(0, step, chain_length=0, fio_run=fake_run(d),
                                 counters_before={"host.reads": 5, "engine.snapshot_allocated_bytes": 10},
                                 counters_after={"host.reads": 25, "engine.snapshot_allocated_bytes": 30})
    run = s.published
    assert run is not None and run.parent == data_dir / "local" / "unit"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["format_version"] == RECORD_VERSION and manifest["profile"]["name"] == "smoke"
    assert manifest["variants"] == {"v1": {"engine": "x"}}
    rec = RunRecord.load(run)
    (m,) = rec.measurements
    assert m.delta("host.reads") == 20
    with pytest.raises(ValueError, match="gauge"):
        m.delta("engine.snapshot_allocated_bytes")
    assert m.counters["engine.snapshot_allocated_bytes"].after == 30
    header = (run / "results.csv").read_text().splitlines()[0].split(",")
    assert header[-1] == "path" and not any(c.startswith("host") for c in header)
    wide = rec.per_measurement(counters=("host.reads", "engine.snapshot_allocated_bytes"))
    assert wide.loc[0, "host.reads"] == 20 and wide.loc[0, "engine.snapshot_allocated_bytes"] == 30
    assert wide.loc[0, "iops"] == 200
    assert published_runs("local", "unit") == [run]
    assert not s.staging.exists()


def test_the_provenance_is_the_code_that_started_measuring(data_dir, work_dir, monkeypatch):
    from snaptax import provenance
    state = {"git": {"commit": "a" * 40, "dirty": False}}
    monkeypatch.setattr(provenance, "collect", lambda: json.loads(json.dumps(state)))
    with session() as s:
        state["git"] = {"commit": "b" * 40, "dirty": True}         # a commit made while the run measures
    assert s.published is not None
    assert RunRecord.load(s.published).manifest.code_label == "a" * 10


def test_a_run_from_uncommitted_code_keeps_the_diff_it_measured_with(data_dir, work_dir, monkeypatch):
    from snaptax import provenance
    diff = "--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    monkeypatch.setattr(provenance, "collect", lambda: {"git": {"commit": "a" * 40, "dirty": True}})
    monkeypatch.setattr(provenance, "uncommitted_diff", lambda: diff)
    with session() as s:
        monkeypatch.setattr(provenance, "uncommitted_diff", lambda: "changed later")   # not the code that measured
    assert s.published is not None
    assert (s.published / provenance.UNCOMMITTED_DIFF).read_text() == diff
    git = RunRecord.load(s.published).manifest.provenance["git"]
    assert git == {"commit": "a" * 40, "dirty": True, "uncommitted_diff": provenance.UNCOMMITTED_DIFF}


def test_a_run_from_committed_code_keeps_no_diff(data_dir, work_dir, monkeypatch):
    from snaptax import provenance
    monkeypatch.setattr(provenance, "collect", lambda: {"git": {"commit": "a" * 40, "dirty": False}})
    monkeypatch.setattr(provenance, "uncommitted_diff", lambda: pytest.fail("a clean tree needs no diff"))
    with session() as s:
        pass
    assert s.published is not None and not (s.published / provenance.UNCOMMITTED_DIFF).exists()
    assert "uncommitted_diff" not in RunRecord.load(s.published).manifest.provenance["git"]


@pytest.mark.parametrize("cpu, label", [("Intel(R) Xeon(R) Processor", "Intel Xeon"), ("AMD EPYC", "AMD EPYC"),
                                        ("Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz", "Intel Core i7-8650U"),
                                        (None, "?")])
def test_the_host_label_is_the_cpu_model_a_reader_tells_hosts_apart_by(data_dir, work_dir, monkeypatch, cpu, label):
    from snaptax import provenance
    monkeypatch.setattr(provenance, "collect", lambda: {"host": {"cpu": cpu}} if cpu else {})
    with session() as s:
        pass
    assert s.published is not None
    assert RunRecord.load(s.published).manifest.host_label == label


def test_a_discarded_variant_leaves_no_trace_but_its_events(data_dir, work_dir):
    with session() as s:
        for name, attempts in (("keep", 1), ("retry", 2)):
            for k in range(attempts):
                with s.in_variant(name, {"attempt": k}):
                    step = Measure(JOB, f"m{k}")
                    d = s.measurement_dir(0, step)
                    s.record_measurement(0, step, chain_length=0, fio_run=fake_run(d, iops=100.0 * (k + 1)),
                                         counters_before={"host.reads": 0}, counters_after={"host.reads": 1})
                    if name == "retry" and k == 0:
                        s.log_event("attempt_failed")
                        assert s.discard_variant(name) == 1
                        assert not (s.staging / "measurements" / "retry").exists()
    rec = RunRecord.load(s.published)
    assert sorted(m.directory.parent.name for m in rec.measurements) == ["keep", "retry"]
    assert set(rec.results().query("variant == 'retry'").iops) == {200.0}
    assert len(rec.counters().query("variant == 'retry'")) == 1
    assert [e["event"] for e in rec.manifest.events] == ["attempt_failed"]


def test_unknown_counter_is_refused(tmp_path):
    step = Measure(JOB, "create")
    with pytest.raises(UnknownCounter, match="host_host_reads"):
        write_run(tmp_path, "unit", "smoke", {}, [("v", 0, step, 0)],
                  lambda *a: (fio_result("randrw", 1, 1), {"host_host_reads": 0}, {"host_host_reads": 1}, {}))


def test_an_unknown_format_version_is_refused_in_one_line(tmp_path):
    step = Measure(JOB, "create")
    run = write_run(tmp_path, "unit", "smoke", {}, [("v", 0, step, 0)],
                    lambda *a: (fio_result("randrw", 1, 1), {}, {}, {}))
    man = json.loads((run / "manifest.json").read_text())
    man["format_version"] = 7
    (run / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(RecordError, match="version 7"):
        RunRecord.load(run)
    with pytest.raises(RecordError, match="not a complete run"):
        RunRecord.load(tmp_path)


def test_emulator_lateness_flags_a_measurement(tmp_path):
    step = Measure(JOB, "qd")

    def measured(variant, index, step, chain):
        late = 0.001 if index == 1 else 0.00001        # s per request, against a 5 ms service time
        before = {"emulator.released": 0, "emulator.release_late_s_sum": 0, "host.member0.busy_s": 0,
                  "host.member_reads": 0}
        after = {"emulator.released": 100, "emulator.release_late_s_sum": 100 * late, "host.member0.busy_s": 0.5,
                 "host.member_reads": 100}
        return fio_result("randrw", 100, 0), before, after, {}

    run = write_run(tmp_path, "unit", "smoke", {}, [("v", 0, step, 0), ("v", 1, step, 0)], measured)
    rec = RunRecord.load(run)
    late = rec.lateness()
    assert list(late.flagged) == [False, True]
    assert late.lateness_fraction.iloc[1] == pytest.approx(0.2)
    assert "WARNING 1 of 2" in rec.validity_line()


def test_a_flagged_run_names_the_hypervisor_steal_its_counters_recorded(tmp_path):
    from snaptax.host.procs import CpuTimes
    from snaptax.record import machine_counters

    step = Measure(JOB, "qd")

    def measured(variant, index, step, chain):
        before = {"emulator.released": 0, "emulator.release_late_s_sum": 0, "host.member0.busy_s": 0,
                  "host.member_reads": 0, **machine_counters(CpuTimes(10.0, 10.0, 1.0))}
        after = {"emulator.released": 100, "emulator.release_late_s_sum": 0.1, "host.member0.busy_s": 0.5,
                 "host.member_reads": 100, **machine_counters(CpuTimes(13.0, 15.0, 1.0 + 2.0 * index))}
        return fio_result("randrw", 100, 0), before, after, {}

    run = write_run(tmp_path, "unit", "smoke", {}, [("v", 0, step, 0), ("v", 1, step, 0)], measured)
    rec = RunRecord.load(run)
    assert [m.steal_fraction for m in rec.measurements] == [0.0, pytest.approx(2 / 10)]   # steal/(busy+idle+steal)
    assert rec.validity_line().endswith("the hypervisor took up to 20.0 % of the CPU time (steal) in them")
    assert machine_counters(None) == {}


def test_a_fio_run_records_the_machine_cpu_times_around_it(data_dir, work_dir):
    with session() as s:
        with s.in_variant("v1", {"engine": "x"}):
            step = Measure(JOB, "create")
            d = s.measurement_dir(0, step)
            from snaptax.host.procs import CpuTimes
            run = fio.FioRun(d, fake_run(d).result, 1.0, CpuTimes(1.0, 2.0, 0.5), CpuTimes(2.0, 4.0, 0.75))
            s.record_measurement(0, step, chain_length=0, fio_run=run, counters_before={}, counters_after={})
    m = RunRecord.load(s.published).measurements[0]
    assert m.counters["machine.cpu_steal_s"].delta == pytest.approx(0.25)
    assert m.steal_fraction == pytest.approx(0.25 / 3.25)


def test_failed_run_leaves_nothing(data_dir, work_dir):
    with pytest.raises(RuntimeError):
        with session() as s:
            step = Measure(JOB, "create")
            s.record_measurement(0, step, chain_length=0, fio_run=fake_run(s.measurement_dir(0, step)),
                                 counters_before={}, counters_after={})
            raise RuntimeError("disk on fire")
    assert not (data_dir / "local" / "unit").exists() or not any((data_dir / "local" / "unit").iterdir())
    assert not s.staging.exists()


@pytest.mark.committed
def test_committed_runs_load_and_hold_only_what_they_measured(monkeypatch):
    """Every committed run reads back whole, and holds only what its measurement wrote: nothing derived (its
    analysis's values live outside the run, snaptax.derived and snaptax.paper.printedvalues)."""
    from snaptax import studies
    from snaptax.paths import data_dir

    monkeypatch.delenv("SNAPTAX_DATA_DIR", raising=False)   # the checkout's data/, even inside make test
    runs = [run for study in studies.REGISTRY for run in published_runs("local", study.id)]
    assert runs and data_dir().exists()
    for run in runs:
        rec = RunRecord.load(run)
        assert len(rec.measurements) == rec.manifest.measurements
        assert not (run / "results.json").exists(), f"{run}: a derived file inside a raw run"
