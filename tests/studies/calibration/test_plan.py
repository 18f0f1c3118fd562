"""The calibration plan: zero device, one variant per drive profile, seed 000's reads double; counts from the plan."""
import pytest

from snaptax import profiles, studies
from snaptax.plan import TakeSnapshot
from snaptax.spindle.measure import span_of
from snaptax.studies.calibration import plan as planmod
from tests.parameters import assert_missing_is_named, assert_round_trip, committed_parameters


def test_registered():
    s = studies.get("calibration")
    assert s.notebook == "02_calibration.ipynb"
    assert s.describe_plan(profiles.get("smoke")) == planmod.describe(profiles.get("smoke"))


def test_drive_profiles_are_the_mechanical_ones():
    assert planmod.drive_profiles() == ["nlsas7k2", "sas10k", "sas15k"]


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_variants_and_points(name):
    p = profiles.get(name)
    pts = planmod.scale(p)
    study = planmod.build_plan(p)
    assert [v.variant for v in study.variants] == ["zero", "nlsas7k2", "sas10k", "sas15k", "reads-double"]
    assert planmod.drive_variants(study) == planmod.drive_profiles()
    drive = study.variant("sas10k").plan
    qd = [m for _, m, _ in drive.measurements() if m.phase == "qd"]
    span = [m for _, m, _ in drive.measurements() if m.phase == "span"]
    assert len(qd) == len(planmod.QD_RWS) * len(pts.depths) * p.repeats
    assert {m.repeat for m in qd} == set(range(p.repeats))
    assert sorted({m.job.iodepth for m in qd}) == sorted(pts.depths)
    assert [span_of(m.job.name) for m in span] == list(pts.spans)
    assert all(m.job.iodepth == 1 and ("log_offset", "1") in m.job.options() for m in span)
    assert {m.job.runtime_s for m in span} == {p.runtime_s * pts.span_runtime_factor}
    # the plan's own counts, not arithmetic done again
    counts = study.phase_counts()
    assert counts["qd"] == 3 * len(qd) and counts["span"] == 3 * len(span) and counts["harness"] == 1
    assert counts["none"] == counts["snapshot"] == p.repeats
    assert study.points() == sum(counts.values())


def test_reads_double_snapshots_then_rewrites():
    p = profiles.get("quick")
    plan = planmod.build_plan(p).variant("reads-double").plan
    phases = ["TAKE" if isinstance(s, TakeSnapshot) else getattr(s, "phase", "SET") for s in plan.steps]
    sweep = [x for c in planmod.scale(p).reads_double_sweep for x in ("SET", *[planmod.sweep_phase(c)] * 2)]
    assert phases == ["prefill", "none", "none", "TAKE", "rewrite", "snapshot", "snapshot", *sweep]
    chains = {m.phase: n for _, m, n in plan.measurements()}
    assert chains == {"prefill": 0, "none": 0, "rewrite": 1, "snapshot": 1} | {x: 1 for x in sweep if x != "SET"}
    cfg = planmod.reads_double_config(p)
    assert cfg.name == "on-disk-metadata" and cfg.l2_cache_size < cfg.l2_bytes_for(p.disk_size)
    read = [m for _, m, _ in plan.measurements() if m.phase == "none"][0].job
    assert (read.rw, read.iodepth, read.size) == ("randread", planmod.scale(p).reads_double_iodepth,
                                                  p.disk_size)


def test_a_subset_of_drives():
    study = planmod.build_plan(profiles.get("smoke"), drives=["sas10k"])
    assert [v.variant for v in study.variants] == ["zero", "sas10k", "reads-double"]
    assert planmod.parameters(profiles.get("smoke"), study, "raid1_10k").drive_profiles == ("sas10k",)


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_describe_counts_come_from_the_plan(name):
    p = profiles.get(name)
    text = planmod.describe(p)
    study = planmod.build_plan(p)
    assert f"{study.points()} fio runs in {len(study.variants)} variants" in text
    assert f"fio time >= {study.fio_seconds():.0f} s" in text
    assert ", ".join(f"{k} {v}" for k, v in study.phase_counts().items()) in text
    assert "sas10k" in text and "reads-double (seed 000)" in text
    assert text == planmod.describe(p)


def test_quick_plan_time_is_the_sum_of_its_jobs():
    # smoke: 3 drives × (6 × 2 s + 3 × 6 s) + harness 4 s + reads double 2 × 2 s and its sweep's 2 coverages × 2 s
    # (prefills are not time-based)
    assert planmod.build_plan(profiles.get("smoke")).fio_seconds() == 3 * (6 * 2 + 3 * 6) + 4 + 2 * 2 + 2 * 2


def test_parameters_read_back_from_the_manifest_and_a_missing_key_is_named():
    p = profiles.get("smoke")
    params = planmod.parameters(p, planmod.build_plan(p), "raid1_10k")
    assert_round_trip(params)
    assert_missing_is_named(params, "capacity")
    assert_missing_is_named(params, "scale.span_runtime_factor")     # inside the recorded CalibrationScale


@pytest.mark.committed
def test_every_committed_run_s_parameters_load(monkeypatch):
    """Format-3 runs recorded no span_runtime_factor: record.upgrade reads it from their span runs' length."""
    for run, params in committed_parameters(monkeypatch, "calibration", planmod.CalibrationParameters).items():
        assert params.capacity > 0 and params.drive_profiles
        runtime_s = profiles.get(run.split("-")[1]).runtime_s
        assert params.scale.span_runtime_factor * runtime_s == params.span_runtime_s, run


def test_the_reads_double_variant_sweeps_the_overlay_s_cache_after_its_reads():
    from snaptax.plan import SetCache

    p = profiles.get("quick")
    steps = planmod.reads_double_plan(p).steps
    sets = [s for s in steps if isinstance(s, SetCache)]
    assert [s.coverage for s in sets] == list(planmod.scale(p).reads_double_sweep) and len(sets) == 6
    first = steps.index(sets[0])
    # the stand-in's own reads come first, unchanged; each coverage's reads follow its SetCache
    assert [s.phase for s in steps[:first] if hasattr(s, "phase")][-p.repeats:] == ["snapshot"] * p.repeats
    for s in sets:
        i = steps.index(s)
        assert [m.phase for m in steps[i + 1:i + 1 + p.repeats]] == [planmod.sweep_phase(s.coverage)] * p.repeats
        assert planmod.sweep_coverage(planmod.sweep_phase(s.coverage)) == s.coverage
    assert planmod.sweep_coverage("snapshot") is None
