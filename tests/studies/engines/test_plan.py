"""The engine-comparison plan: one variant per engine and grain, each cycling snapshot / measure / delete."""
import pytest

from snaptax import profiles
from snaptax.errors import ConfigError
from snaptax.plan import DeleteSnapshot, StudyPlan, TakeSnapshot
from snaptax.studies.engines import plan as planmod
from tests.parameters import assert_missing_is_named, assert_round_trip, committed_parameters

KiB, MiB = 1024, 1 << 20


def test_plan_cycles_snapshot_measure_delete():
    p = profiles.get("smoke")
    s = planmod.scale(p)
    plan = planmod.variant_plan(p)
    phases = [m.phase for _, m, _ in plan.measurements()]
    assert phases[0] == "prefill"
    chains = {m.phase: n for _, m, n in plan.measurements()}
    assert chains["base-write"] == chains["base-read"] == 0
    assert all(chains[ph] == 1 for ph in ("first-write", "snap-read", "overwrite", "steady-write", "steady-read"))
    assert sum(isinstance(x, TakeSnapshot) for x in plan.steps) == p.repeats
    assert sum(isinstance(x, DeleteSnapshot) for x in plan.steps) == p.repeats
    assert phases[1:8] == ["base-write", "base-read", "first-write", "snap-read", "overwrite", "steady-write",
                           "steady-read"]
    assert phases[-2:] == ["base-write", "base-read"]          # closing: brackets the last cycle's steady phases
    assert [m.repeat for _, m, _ in plan.measurements()][-2:] == [p.repeats, p.repeats]
    for _, m, _ in plan.measurements():
        opts = dict(m.job.options())
        if m.phase in planmod.WRITE_PHASES + planmod.READ_PHASES:
            # QD1 and a fixed number of uniformly placed 4 KiB I/Os (the model's first-write fraction needs k)
            assert opts["iodepth"] == "1" and opts["bs"] == "4096" and opts["norandommap"] == "1"
            assert int(opts["number_ios"]) == (s.writes if "write" in m.phase else s.reads)
        else:
            assert m.job.bs == MiB and m.job.size == s.disk_size and m.job.rw == "write"
    reads = [m for _, m, _ in plan.measurements() if m.phase == "base-read"]
    assert dict(reads[0].job.options()).get("randseed")  # reads do not retrace the writes' offsets


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_study_plan_has_one_variant_per_engine_and_grain(name):
    p = profiles.get(name)
    study = planmod.build_plan(p)
    assert isinstance(study, StudyPlan)
    vs = planmod.variants(p)
    assert [vp.variant for vp in study.variants] == [v.name for v in vs]
    assert len({v.name for v in vs}) == len(vs)
    per_variant = sum(1 for _ in planmod.variant_plan(p).measurements())
    claim_cycles = max(p.repeats, planmod.CLAIM_CYCLES[name])
    claim_first = max(p.repeats, planmod.CLAIM_FIRST_CYCLES[name])
    # the long variants' extra cycles: writes only, first-write in the last claim_first cycles
    long = sum(v.name in planmod.LONG_VARIANTS for v in vs)
    extra = long * (3 * (claim_cycles - p.repeats) + (claim_first - p.repeats))
    assert study.points() == len(vs) * per_variant + extra == len(vs) * (3 + 7 * p.repeats) + extra
    assert study.phase_counts()["first-write"] == len(vs) * p.repeats + long * (claim_first - p.repeats)
    assert study.phase_counts()["steady-write"] == len(vs) * p.repeats + long * (claim_cycles - p.repeats)
    assert study.fio_seconds() == 0       # counted I/Os, not timed ones


def test_smoke_is_small_and_every_profile_measures_what_the_paper_names():
    smoke = planmod.variants(profiles.get("smoke"))
    assert sum(v.family == "lvmthin" for v in smoke) == 1          # one guest boot in CI
    assert planmod.scale(profiles.get("smoke")).disk_size <= 64 * MiB
    names = {v.name for v in smoke}
    assert set(planmod.LONG_VARIANTS) <= names
    for name in profiles.PROFILES:
        assert names <= {v.name for v in planmod.variants(profiles.get(name))}, name


def test_variants_and_scale_validation():
    v = {x.name: x for x in planmod.variants(profiles.get("full"))}
    assert v["qcow2-c2m-ext"].copy_grain == 64 * KiB and v["qcow2-c2m"].copy_grain == 2 * MiB
    assert v["cofw-p8k"].mode == "copy-out" and v["lvmthin-c1m"].mode == "redirect-copy"
    assert v["qcow2-c64k"].describe() == {"family": "qcow2", "grain": 64 * KiB, "copy_grain": 64 * KiB,
                                          "mode": "redirect-merge", "analogue": planmod.ANALOGUE["qcow2"]}
    assert v["cofw-p16k"].config.page_size == 16 * KiB and v["lvmthin-c128k"].config.chunk_size == 128 * KiB
    assert v["qcow2-c16k-ext"].config.extended_l2 and not v["qcow2-c16k"].config.extended_l2
    with pytest.raises(ConfigError, match="qcow2_ext_clusters"):
        planmod.EngineScale(64 * MiB, 10, 10, 10, (4 * KiB,), (8 * KiB,), (8 * KiB,), (64 * KiB,))
    with pytest.raises(ConfigError, match="writes"):
        planmod.EngineScale(64 * MiB, 10 ** 9, 10, 10 ** 9, (4 * KiB,), (), (), ())
    with pytest.raises(ConfigError, match="claim_writes"):
        planmod.EngineScale(64 * MiB, 10, 10, 5, (4 * KiB,), (), (), ())
    with pytest.raises(ConfigError, match="no engine scale"):
        planmod.scale(profiles.Profile("huge", 1, 1, 0, 1 << 30))


def test_describe_counts_come_from_the_plan():
    p = profiles.get("quick")
    text = planmod.describe(p)
    study = planmod.build_plan(p)
    assert f"{study.points()} fio runs in {len(study.variants)} engine/grain variants" in text
    assert ", ".join(f"{k} {v}" for k, v in study.phase_counts().items()) in text
    assert f"timed fio time {study.fio_seconds():.0f} s" in text
    assert "qcow2-ext redirect-merge grains 64k, 2m (copy unit = grain/32)" in text


def test_claim_variant_measures_longer_base_and_steady_writes_but_the_same_first_writes():
    profile = profiles.get("quick")
    s = planmod.scale(profile)
    study = planmod.build_plan(profile)

    def ios(variant: str, phase: str) -> set[int]:
        return {int(dict(m.job.options())["number_ios"]) for _, m, _ in study.variant(variant).plan.measurements()
                if m.phase == phase}

    assert s.claim_writes > s.writes
    assert ios(planmod.CLAIM_VARIANT, "base-write") == ios(planmod.CLAIM_VARIANT, "steady-write") == {s.claim_writes}
    assert ios(planmod.CLAIM_VARIANT, "first-write") == {s.writes}
    assert study.variant(planmod.SEED004_VARIANT).plan == study.variant(planmod.CLAIM_VARIANT).plan
    assert ios("qcow2-c64k", "base-write") == ios("qcow2-c64k", "first-write") == {s.writes}


def test_claim_variant_extra_cycles_measure_writes_first_and_reads_keep_their_brackets():
    profile = profiles.get("quick")
    plan = planmod.build_plan(profile).variant(planmod.CLAIM_VARIANT).plan
    extra = planmod.CLAIM_CYCLES["quick"] - profile.repeats
    by_repeat: dict[int, list[str]] = {}
    for _, m, _ in plan.measurements():
        by_repeat.setdefault(m.repeat, []).append(m.phase)
    no_first = planmod.CLAIM_CYCLES["quick"] - planmod.CLAIM_FIRST_CYCLES["quick"]
    for r in range(extra):
        writes = ["base-write", "overwrite", "steady-write"] if r < no_first else \
            ["base-write", "first-write", "overwrite", "steady-write"]
        assert by_repeat[r][-len(writes):] == writes and "base-read" not in by_repeat[r], r
    for r in range(extra, extra + profile.repeats):
        assert set(planmod.READ_PHASES) <= set(by_repeat[r]), r
    # every cycle with reads has a base-read after it (the next cycle's or the closing one)
    assert by_repeat[extra + profile.repeats] == ["base-write", "base-read"]


def test_parameters_read_back_from_the_manifest_and_a_missing_key_is_named():
    params = planmod.parameters(profiles.get("quick"), "ssd")
    assert params.variants == tuple(vp.variant for vp in planmod.build_plan(profiles.get("quick")).variants)
    assert_round_trip(params)
    assert_missing_is_named(params, "scale.claim_writes")     # inside the recorded EngineScale
    assert_missing_is_named(params, "io_size")


@pytest.mark.committed
def test_every_committed_run_s_parameters_load(monkeypatch):
    for params in committed_parameters(monkeypatch, "engines", planmod.EnginesParameters).values():
        assert params.scale.claim_writes >= params.scale.writes
