"""The metadata-cache plan: coverages as whole cache slices, alternating neighbouring pairs, one fresh volume per
coverage, and a description made from the plan."""
from fractions import Fraction

import pytest

from snaptax import fio, profiles
from snaptax.errors import ConfigError
from snaptax.plan import DeleteSnapshot, Measure, TakeSnapshot
from snaptax.studies import get
from snaptax.studies.metadata_cache import plan as planmod
from tests.parameters import assert_missing_is_named, assert_round_trip, committed_parameters

KiB, MiB = 1 << 10, 1 << 20


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_every_coverage_is_whole_slices_and_full_coverage_holds_every_table(name):
    p = profiles.get(name)
    cfgs = planmod.configs(p)
    total = planmod.l2_total(p.disk_size)
    assert [c.name for c in cfgs] == [planmod.variant_name(c) for c in planmod.scale(p).coverages]
    for c, frac in zip(cfgs, planmod.scale(p).coverages, strict=True):
        assert c.l2_cache_size is not None and c.l2_cache_size % (4 * KiB) == 0
        assert c.extended_l2 and c.cluster_size == 64 * KiB
        if frac == 1:
            assert c.l2_cache_size > total and planmod.cached_fraction(c, p.disk_size) == 1.0
        else:
            assert planmod.cached_fraction(c, p.disk_size) == pytest.approx(float(frac), abs=4 * KiB / total)


def test_pairs_alternate_and_each_snapshot_is_deleted_after_its_run():
    p = profiles.get("quick")
    s = planmod.scale(p)
    study = planmod.build_plan(p)
    assert len(study.variants) == len(s.coverages)
    for vp in study.variants:
        runs = [(m.phase, m.repeat, n) for _, m, n in vp.plan.measurements() if m.job.name != planmod.READ_JOB
                and m.phase != planmod.ALLOCATE]
        assert runs[:2] == [("prefill", 0, 0), ("warmup", 0, 0)]
        pairs = runs[2:]
        assert len(pairs) == 2 * s.pairs
        for k in range(s.pairs):
            order = [n for ph, r, n in pairs if r == k]
            assert order == ([0, 1] if k % 2 == 0 else [1, 0])
        assert all(m.job.ramp_time_s == 0 for _, m, _ in vp.plan.measurements())
        assert vp.plan.max_chain_length == 1


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_the_read_job_follows_each_randrw_pair_at_its_coverages_and_leaves_the_randrw_pairs_as_they_were(name):
    p = profiles.get(name)
    s = planmod.scale(p)
    study = planmod.build_plan(p)
    reads = {planmod.variant_name(c) for c in s.read_coverages}
    assert reads and reads <= {vp.variant for vp in study.variants}
    for vp in study.variants:
        steps = vp.plan.steps
        randrw = tuple(st for st in steps if not (isinstance(st, Measure) and st.job.name in
                                                 (planmod.READ_JOB, planmod.ALLOCATE)))
        # without the read job's runs (and its snapshots), the randrw plan is the one without the read job
        without = planmod.variant_plan(p, read=False).steps
        read_runs = [(m, n) for _, m, n in vp.plan.measurements() if m.job.name == planmod.READ_JOB]
        if vp.variant not in reads:
            assert steps == without and not read_runs
            continue
        assert _drop_empty_snapshots(randrw) == without
        assert [m.phase for m, _ in read_runs] == ["pair"] * 2 * s.pairs
        for k in range(s.pairs):
            assert [n for m, n in read_runs if m.repeat == k] == ([0, 1] if k % 2 == 0 else [1, 0])
        # each read job's snapshot run comes right after the allocating writes, in the same snapshot
        for i, st in enumerate(steps):
            if isinstance(st, Measure) and st.job.name == planmod.READ_JOB and _chain_at(steps, i) == 1:
                assert isinstance(steps[i - 1], Measure) and steps[i - 1].phase == planmod.ALLOCATE
                assert isinstance(steps[i - 2], TakeSnapshot) and isinstance(steps[i + 1], DeleteSnapshot)
            if isinstance(st, Measure) and st.job.name == planmod.READ_JOB:
                # each read pair after the randrw pair of its repeat (and before the next)
                prior = [x for x in steps[:i] if isinstance(x, Measure) and x.job.name == planmod.JOB
                         and x.phase == "pair"]
                assert len(prior) == 2 * (st.repeat + 1)
    assert planmod.planned_seconds(p) == pytest.approx(
        planmod.read_seconds(p) + len(s.coverages) * (1 + 2 * s.pairs) * s.runtime_s)
    assert planmod.read_seconds(p) == pytest.approx(len(s.read_coverages) * 2 * s.pairs * s.read_runtime_s)


def _chain_at(steps, index):
    return sum(isinstance(st, TakeSnapshot) - isinstance(st, DeleteSnapshot) for st in steps[:index])


def _drop_empty_snapshots(steps):
    out = list(steps)
    i = 0
    while i < len(out) - 1:
        if isinstance(out[i], TakeSnapshot) and isinstance(out[i + 1], DeleteSnapshot):
            del out[i:i + 2]
        else:
            i += 1
    return tuple(out)


def test_the_added_time_is_small_at_smoke_and_quick():
    # smoke runs in make test: the read job adds a few seconds of fio time; quick about half a minute
    assert planmod.read_seconds(profiles.get("smoke")) == 4
    assert planmod.read_seconds(profiles.get("quick")) == 32


def test_the_read_and_allocating_jobs():
    p = profiles.get("quick")
    read = dict(planmod.read_job(p).options())
    randrw = dict(fio.seed001_job("randrw", size=p.disk_size, runtime_s=2).options())
    assert read == randrw | {"rw": "randread"}       # seed 001's random job with reads only
    assert read["runtime"] == "2" and read["iodepth"] == "32" and read["numjobs"] == "4" and read["direct"] == "1"
    # one 4 KiB write per L2 table: 1 GiB of 64 KiB clusters with 16-byte entries = 4 tables of 256 MiB each
    assert planmod.l2_tables(p.disk_size) == 4 and planmod.l2_table_span() == 256 << 20
    alloc = planmod.allocate_job(p)
    assert not alloc.time_based and alloc.runtime_s is None and alloc.log_avg_msec is None
    opts = dict(alloc.options())
    assert opts == {"iodepth": "1", "rw": "write", "bs": "4096", "direct": "1", "numjobs": "4",
                    "group_reporting": "1", "size": "4K", "randrepeat": "1", "offset_increment": "256M"}
    assert planmod.l2_tables(profiles.get("smoke").disk_size) == 1
    assert dict(planmod.allocate_job(profiles.get("smoke")).options())["numjobs"] == "1"
    assert dict(planmod.allocate_job(profiles.get("full")).options())["numjobs"] == "16"


def test_describe_counts_come_from_the_plan():
    p = profiles.get("quick")
    text = planmod.describe(p)
    study = planmod.build_plan(p)
    assert f"{study.points()} fio runs in {len(study.variants)} variants" in text
    assert "cover-7-8: L2 cache 224 KiB = 0.875 of the tables" in text
    assert "(pair runs by job: randrw 48, randread 16)" in text
    assert f"fio time >= {study.fio_seconds():.0f} s, of which the randread job's runs 32 s" in text
    assert "randread job in cover-1-8, cover-1-1: 4 neighbouring pairs of 2-s runs" in text
    assert "its 4 L2 table(s) by one 4 KiB write per table" in text
    assert "randread job: iodepth=32 rw=randread" in text and "offset_increment=256M" in text
    assert get("metadata_cache").describe_plan(p) == text


def test_scale_validation():
    with pytest.raises(ConfigError, match="'coverages'"):
        planmod.MetadataCacheScale((Fraction(1, 2), Fraction(1)), pairs=2, runtime_s=1)
    with pytest.raises(ConfigError, match="'coverages'"):
        planmod.MetadataCacheScale((Fraction(1), Fraction(1, 2), Fraction(1, 4)), pairs=2, runtime_s=1)
    with pytest.raises(ConfigError, match="'pairs'"):
        planmod.MetadataCacheScale((Fraction(1, 4), Fraction(1, 2), Fraction(1)), pairs=1, runtime_s=1)
    with pytest.raises(ConfigError, match="'read_coverages'"):
        planmod.MetadataCacheScale((Fraction(1, 4), Fraction(1, 2), Fraction(1)), pairs=2, runtime_s=1,
                                   read_coverages=(Fraction(1, 8),))
    with pytest.raises(ConfigError, match="'read_coverages'"):
        planmod.MetadataCacheScale((Fraction(1, 4), Fraction(1, 2), Fraction(1)), pairs=2, runtime_s=1,
                                   read_coverages=(Fraction(1), Fraction(1, 4)))
    with pytest.raises(ConfigError, match="'read_runtime_s'"):
        planmod.MetadataCacheScale((Fraction(1, 4), Fraction(1, 2), Fraction(1)), pairs=2, runtime_s=1,
                                   read_coverages=(Fraction(1, 4),), read_runtime_s=0)
    with pytest.raises(ConfigError, match="no metadata-cache scale"):
        planmod.scale(profiles.Profile("huge", 1, 1, 0, 1 << 30))


def test_cache_sizing_is_the_chain_studys_presets_rule():
    from snaptax.engines.qcow2 import l2_cache_size_for, metadata_configs

    assert l2_cache_size_for(100_000, Fraction(1, 8), 64 * KiB) == 12 * KiB       # 12 500 B: three whole slices
    assert l2_cache_size_for(1000, Fraction(1, 2), 64 * KiB) == 8 * KiB           # at least two slices
    assert l2_cache_size_for(100_000, Fraction(1), 64 * KiB) == 100_000 + 64 * KiB  # every table, one cluster more
    for disk in (32 * MiB, 1 << 30, 10 << 30):
        on_disk, in_memory = metadata_configs(disk)
        assert planmod.config(Fraction(1, 8), disk).l2_cache_size == on_disk.l2_cache_size
        assert planmod.config(Fraction(1), disk).l2_cache_size == in_memory.l2_cache_size


def test_parameters_read_back_from_the_manifest_and_a_missing_key_is_named():
    params = planmod.parameters(profiles.get("quick"), "ssd")
    assert_round_trip(params)
    assert_missing_is_named(params, "coverage")
    assert_missing_is_named(params, "scale.coverages")     # inside the recorded MetadataCacheScale, as '7/8'
    assert params.to_json()["scale"]["coverages"][-2:] == ["15/16", "1"]
    assert params.to_json()["scale"]["read_coverages"] == ["1/8", "1"] and params.scale.read_runtime_s == 2


@pytest.mark.committed
def test_every_committed_run_s_parameters_load(monkeypatch):
    """Format-3 runs recorded no coverages: record.upgrade reads them from the variants' names."""
    for params in committed_parameters(monkeypatch, "metadata_cache", planmod.MetadataCacheParameters).values():
        assert len(params.coverage) >= 3
        assert [planmod.variant_name(c) for c in params.scale.coverages] == sorted(
            params.coverage, key=lambda name: Fraction(*map(int, name.split("-")[1:])))
