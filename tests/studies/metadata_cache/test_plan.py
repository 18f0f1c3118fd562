"""The metadata-cache plan: coverages as whole cache slices, alternating neighbouring pairs, one fresh volume per
coverage, and a description made from the plan."""
from fractions import Fraction

import pytest

from snaptax import profiles
from snaptax.errors import ConfigError
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
    runs = [(m.phase, m.repeat, n) for _, m, n in study.variants[0].plan.measurements()]
    assert runs[:2] == [("prefill", 0, 0), ("warmup", 0, 0)]
    pairs = runs[2:]
    assert len(pairs) == 2 * s.pairs
    for k in range(s.pairs):
        order = [n for ph, r, n in pairs if r == k]
        assert order == ([0, 1] if k % 2 == 0 else [1, 0])
    assert all(m.job.ramp_time_s == 0 for _, m, _ in study.variants[0].plan.measurements())
    assert study.variants[0].plan.max_chain_length == 1


def test_describe_counts_come_from_the_plan():
    p = profiles.get("quick")
    text = planmod.describe(p)
    study = planmod.build_plan(p)
    assert f"{study.points()} fio runs in {len(study.variants)} variants" in text
    assert "cover-7-8: L2 cache 224 KiB = 0.875 of the tables" in text
    assert get("metadata_cache").describe_plan(p) == text


def test_scale_validation():
    with pytest.raises(ConfigError, match="'coverages'"):
        planmod.MetadataCacheScale((Fraction(1, 2), Fraction(1)), pairs=2, runtime_s=1)
    with pytest.raises(ConfigError, match="'coverages'"):
        planmod.MetadataCacheScale((Fraction(1), Fraction(1, 2), Fraction(1, 4)), pairs=2, runtime_s=1)
    with pytest.raises(ConfigError, match="'pairs'"):
        planmod.MetadataCacheScale((Fraction(1, 4), Fraction(1, 2), Fraction(1)), pairs=1, runtime_s=1)
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


@pytest.mark.committed
def test_every_committed_run_s_parameters_load(monkeypatch):
    """Format-3 runs recorded no coverages: record.upgrade reads them from the variants' names."""
    for params in committed_parameters(monkeypatch, "metadata_cache", planmod.MetadataCacheParameters).values():
        assert len(params.coverage) >= 3
        assert [planmod.variant_name(c) for c in params.scale.coverages] == sorted(
            params.coverage, key=lambda name: Fraction(*map(int, name.split("-")[1:])))
