"""The tiering study measured end to end at the smoke profile (integration: nbdkit pools, qemu-storage-daemon,
fio), and the emulated pools' own model of the workload."""
import dataclasses

import pytest

from snaptax import profiles
from snaptax.host import rig as rigmod
from snaptax.studies.tiering import analyse as an, measure, plan as planmod

from ...conftest import requires_root, requires_spindles


def test_the_emulated_tiers_own_times_per_io():
    rig = rigmod.load("local")
    s = planmod.scale(profiles.get("quick"))
    devs = measure.pool_devices(rig)
    tier = measure.emulated_time_per_io(measure.pool_spec(rig, devs["tier_pool"]), devs["tier_pool"].capacity, s)
    sas = measure.emulated_time_per_io(measure.pool_spec(rig, devs["sas_pool"]), devs["sas_pool"].capacity, s)
    # the SSD tier (a Pulsar XT.2 from its datasheet: 48k/22k 4 KiB read/write IOPS at QD 32) serves the workload
    # several times faster than the RAID5 behind it, which is sas_pool's array (about 10x with the datasheet's
    # figures; the assumed figures before 2026-11-28 gave tens of times)
    assert 5 * tier["ssd_us_per_io"] < tier["hdd_us_per_io"]
    assert tier["hdd_us_per_io"] == pytest.approx(sas["hdd_us_per_io"], rel=0.1)
    assert set(sas) == {"hdd_us_per_io"}


def test_the_untiered_pools_own_model_of_the_two_region_layout():
    rig = rigmod.load("local")
    s = planmod.scale(profiles.get("quick"))
    devs = measure.pool_devices(rig)
    curve = measure.span_model(measure.pool_spec(rig, devs["sas_pool"]), devs["sas_pool"].capacity,
                               dataclasses.replace(s, span_model_ios=1500))
    assert curve["fraction"] == list(planmod.SPAN_MODEL_FRACTIONS)
    assert curve["seeds"] == list(planmod.SPAN_MODEL_SEEDS)       # recorded: the analysis counts them from the run
    assert [curve[k][0] for k in ("ratio_pct", "ratio_low", "ratio_high")] == pytest.approx([100.0] * 3)
    assert all(lo <= x <= hi for lo, x, hi in zip(curve["ratio_low"], curve["ratio_pct"], curve["ratio_high"],
                                                  strict=True))
    # both regions lie within a few per cent of the stroke: the wider span costs little, and nothing when all the
    # data moved (one region again, as long as the first)
    assert 85.0 < min(curve["ratio_pct"]) < 100.0
    assert curve["ratio_pct"][-1] == pytest.approx(100.0, abs=4.0)
    tier = devs["tier_pool"]
    assert measure.span_model(measure.pool_spec(rig, tier), tier.capacity, s) == {}   # there the SSD share dominates


GATED = ("learn", "relearn")     # the LVM thin plan's gated loops (plan.lvmthin_plan)


@pytest.mark.integration
@requires_root
@requires_spindles
def test_smoke_run_publishes_an_analysable_run(smoke_run):
    record = smoke_run("tiering")
    assert (record.path.parent.parent.name, record.path.parent.name) == ("local", "tiering")
    m = record.manifest
    thin = {planmod.lvmthin_variant(p): p for p in planmod.POOLS}
    sweep = planmod.sweep_variant(0)
    assert set(m.variants) == {*planmod.POOLS, *thin, sweep} and m.emulated
    # the coverage sweep: its phases in order, each point's cache set on its own snapshot and committed after
    assert [x.phase for x in record.measurements if x.variant == sweep] == \
        ["fill", "initial", "settle-1-1", "with-1-1", "after"]
    points = [e for e in m.events if e.get("variant") == sweep and e["event"] in ("snapshot", "commit")]
    assert [e["event"] for e in points] == ["snapshot", "commit"] and points[0]["realised"] == 1.0
    for pool in planmod.POOLS:
        assert [x.phase for x in record.measurements if x.variant == pool and x.phase not in ("learn", "relearn")] \
            == [p for p in planmod.phases_of(pool) if p not in ("learn", "relearn")]
        assert (record.path / "measurements" / pool / "host_series.csv").exists()
        assert m.variants[pool]["study"]["model_time_per_io"]
        assert m.variants[pool]["study"]["spec"]["kind"] == ("tier" if planmod.tiered(pool) else "raid5")
    for variant, pool in thin.items():
        # the LVM thin timeline: the guest's runs on the host's clock, inside the pool's sampled series
        runs = [x for x in record.measurements if x.variant == variant]
        planned = [x for _, x, _ in planmod.lvmthin_plan(planmod.scale(profiles.get("smoke")), pool).measurements()]
        assert [x.phase for x in runs if x.phase not in GATED] == [x.phase for x in planned if x.gate is None]
        for gate in GATED:    # a gated loop ran its first runs, in order, and the host ended it before the last
            ran, of = [x.repeat for x in runs if x.phase == gate], [x for x in planned if x.gate == gate]
            assert ran == list(range(len(ran))) and (1 <= len(ran) < len(of) if of else not ran)
        starts = [x.extra["t_start_s"] for x in runs]
        assert starts == sorted(starts) and all(x.extra["t_end_s"] > x.extra["t_start_s"] for x in runs)
        assert all(x.extra["vm_series"] for x in runs if x.phase != "fill")
        assert m.variants[variant]["engine"] == "lvmthin" and m.variants[variant]["study"]["pool"] == pool
    a = an.analyse(record)
    # per-second VM IOPS count both directions of the mixed job (fiologparser fed one file per direction)
    init = [x for x in record.measurements if x.variant == "sas_pool" and x.phase == "initial"][0]
    assert a.seconds[(a.seconds.pool == "sas_pool") & (a.seconds.phase == "initial")].iops.mean() == pytest.approx(
        init.iops(), rel=0.25)
    assert {o.claim.id for o in a.outcomes} == {
        *(f"tiering.C002-{c}" for c in ("1a", "1b", "1c", "2a", "2b", "2c", "3")), "tiering.initial_over_sas"}
    deletions = a.meas.dropna(subset=["deletion"])
    assert len(deletions) == 2 and all(d["converged"] for d in deletions.deletion)
    thin_rows = a.meas[a.meas.pool.isin(thin)]
    # the guest's I/O reached the pool: every run after the fill has host I/O between its start and end
    assert thin_rows[thin_rows.phase != "fill"].ssd_share.notna().all()
    assert {"tiering.tier_pool.lvmthin.with.ratio", "tiering.sas_pool.lvmthin.after.ratio"} <= {v.key for v in a.values}
    # the sweep is read apart from the timelines: its one coverage's keep and a point, no row of the phases table
    assert list(a.sweep.label) == ["1-1"] and {"tiering.sweep.keep.1-1", "tiering.implied.coverage"} <= {
        v.key for v in a.values}
    assert sweep not in set(a.phases.pool)
