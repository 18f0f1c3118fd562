"""The tiering claims over independent replicates (issue 47.3), on synthetic runs in the real record format (written
into tmp_path only): each replicate's qcow2 timelines on both pools keep their own share of the initial rate, with
little noise within a timeline, so the claims' intervals must come from the spread between the replicates, not from
the batch means; a run of one replicate (smoke, quick, the runs before replicates) is not judged (n < 3)."""
import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from snaptax import claims, fio, profiles
from snaptax.models import tiering as tm
from snaptax.plan import Measure, replicate_name
from snaptax.record import RunRecord, RunWriter
from snaptax.studies.tiering import analyse as an, plan as planmod, replicates
from tests.synthetic import fio_result, rig

PHASE_S = 13                     # seconds per phase: 12 batch seconds after fio's first
TAU_SSD_TIER = 20.0              # the emulated SSD tier's own µs per I/O (its model, recorded by the run)
SAS_INITIAL = 1000.0
# per replicate: the SAS-only pool's with-snapshot ratio and after ratio, the tiered pool's HDD time per I/O
SAS_WITH = (0.50, 0.55, 0.60)
SAS_AFTER = (0.99, 1.00, 1.01)
TAU_HDD = (900.0, 1000.0, 1100.0)
TIER_SHARES = {"initial": 1.0, "settle": 0.3, "with": 0.1, "delete": 0.1, "after": 0.9, "relearned": 1.0}
TAU_SSD_MEASURED = 100.0        # the SSD tier as the harness served it (what the per-second fit sees)


def _sas_rate(phase: str, r: int) -> float:
    return SAS_INITIAL * {"with": SAS_WITH[r], "settle": SAS_WITH[r], "delete": 0.4, "after": SAS_AFTER[r]}.get(
        phase, 1.0)


def _timeline(w: RunWriter, pool: str, r: int) -> None:
    """One qcow2 timeline (no fill, no learning runs: the analysis does not read them) with per-second IOPS that
    wobble by ±1 % within it, its pool's counters every second and the learning verdict."""
    phases = [p for p in TIER_SHARES if pool == planmod.TIERED or p != "relearned"]
    reads, ssd, t, rows = 0.0, 0.0, 0.0, [(0.0, 0.0, 0.0)]
    for index, phase in enumerate(phases):
        share = TIER_SHARES[phase] if pool == planmod.TIERED else 0.0
        rate = (float(tm.iops(share, TAU_SSD_MEASURED, TAU_HDD[r])) if pool == planmod.TIERED
                else _sas_rate(phase, r))
        series = [[k + 1.0, rate * (1 + 0.01 * math.sin(1.7 * k + r + index))] for k in range(PHASE_S)]
        t0 = t
        for _ in range(PHASE_S):
            t += 1.0
            reads += 100.0
            ssd += 100.0 * share
            rows.append((t, reads, ssd))
        step = Measure(planmod.workload(planmod.scale(profiles.get("quick")), PHASE_S, phase, replicate=r), phase)
        extra = {"t_start_s": t0, "t_end_s": t, "vm_series": {"iometer": series}}
        if phase == "delete":
            extra["deletion"] = {"t_delete_start": t0 + 1.0, "t_ready": t0 + 10.0, "t_done": t0 + 11.0}
        before = {"host.reads": rows[-PHASE_S - 1][1], "host.ssd_reads": rows[-PHASE_S - 1][2], "host.tier_cycles": 0}
        after = {"host.reads": reads, "host.ssd_reads": ssd, "host.tier_cycles": 0}
        w.record_measurement(index, step, chain_length=0,
                             fio_run=fio.FioRun(w.measurement_dir(index, step),
                                                fio_result("iometer", rate, runtime_s=PHASE_S), float(PHASE_S)),
                             counters_before=before, counters_after=after, extra=extra)
    path = w.variant_dir() / "host_series.csv"
    path.write_text("t_s,host.reads,host.ssd_reads\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    if pool == planmod.TIERED:
        w.log_event("learn_done", t_s=0.0, learned=r != 1, seconds=10.0)


def make_run(tmp_path, replicates_measured: int, recorded: bool = True) -> RunRecord:
    """A run of `replicates_measured` replicates, in plan.qcow2_variants' order; `recorded=False`: a run made
    before replicates, whose parameters do not name them (record.upgrade reads it as one)."""
    s = dataclasses.replace(planmod.scale(profiles.get("quick")), replicates=replicates_measured)
    params = planmod.parameters(s, {p: "ssd" for p in planmod.POOLS}, lvmthin=False).to_json()
    if not recorded:
        del params["scale"]["replicates"]
    w = RunWriter(rig(tmp_path), planmod.STUDY, profiles.get("quick"), params, tmp_path / "staging",
                  run_id="20260101T000000Z-quick")
    for name, pool, r in planmod.qcow2_variants(s):
        model = {"ssd_us_per_io": TAU_SSD_TIER, "hdd_us_per_io": 1000.0} if pool == planmod.TIERED else \
            {"hdd_us_per_io": 1000.0}
        with w.in_variant(name, {"study": {"pool": pool, "model_time_per_io": model, "replicate": r}}):
            _timeline(w, pool, r)
    return RunRecord.load(w.publish(tmp_path / "data" / "t" / planmod.STUDY / w.run_id))


def _t_interval(logs):
    """The 95 % t interval of exp(mean log) in %, from one log ratio per replicate."""
    x = np.log(np.asarray(logs, dtype=float))
    half = float(sps.t.ppf(0.975, len(x) - 1)) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return 100 * math.exp(x.mean()), 100 * math.exp(x.mean() - half), 100 * math.exp(x.mean() + half)


def test_the_measuring_order_interleaves_the_pools_within_each_replicate():
    s = dataclasses.replace(planmod.scale(profiles.get("smoke")), replicates=3)
    assert [v for v, _, _ in planmod.qcow2_variants(s)] == [
        "sas_pool", "tier_pool", "sas_pool@r1", "tier_pool@r1", "sas_pool@r2", "tier_pool@r2"]
    assert [replicate_name(p, r) for _, p, r in planmod.qcow2_variants(s)] == [
        v for v, _, _ in planmod.qcow2_variants(s)]
    assert (planmod.pool_of("tier_pool@r2"), planmod.engine_of("tier_pool@r2"), planmod.replicate_of("tier_pool@r2")) \
        == ("tier_pool", "qcow2", 2)
    assert (planmod.pool_of("sas_pool.lvmthin"), planmod.engine_of("sas_pool.lvmthin")) == ("sas_pool", "lvmthin")


def test_each_replicate_draws_its_own_offsets_and_the_first_the_offsets_runs_always_drew():
    s = planmod.scale(profiles.get("quick"))
    seeds = {planmod.workload(s, 15, "with", replicate=r).randseed for r in range(3)}
    assert len(seeds) == 3
    assert planmod.workload(s, 15, "with").randseed == planmod.phase_seed("with") == planmod.workload(
        s, 15, "with", replicate=0).randseed


def test_the_plan_grows_with_the_replicates_and_the_lvmthin_contrast_stays_once():
    s1 = dataclasses.replace(planmod.scale(profiles.get("full")), replicates=1)
    s3 = dataclasses.replace(s1, replicates=3)
    lvm = planmod.estimated_seconds(s1) - planmod.estimated_seconds(s1, lvmthin=False)
    assert planmod.estimated_seconds(s3, lvmthin=False) == pytest.approx(3 * planmod.estimated_seconds(s1, False))
    assert planmod.estimated_seconds(s3) - planmod.estimated_seconds(s3, lvmthin=False) == pytest.approx(lvm)
    thin = planmod.planned_points(s1) - planmod.planned_points(s1, lvmthin=False)
    assert planmod.planned_points(s3, lvmthin=False) == 3 * planmod.planned_points(s1, lvmthin=False)
    assert planmod.planned_points(s3) - planmod.planned_points(s3, lvmthin=False) == thin
    assert [planmod.scale(profiles.get(p)).replicates for p in ("smoke", "quick", "full")] == [1, 1, 3]
    assert "3 independent qcow2 timelines per pool" in planmod.describe(profiles.get("full"))
    with pytest.raises(Exception, match="replicates"):
        dataclasses.replace(s1, replicates=0)


def test_three_replicates_are_judged_with_intervals_from_the_spread_between_them(tmp_path):
    a = an.analyse(make_run(tmp_path, 3))
    reps = a.replicates
    assert sorted(set(reps.replicate)) == [0, 1, 2] and set(reps.pool) == set(planmod.POOLS)
    assert a.value("tiering.replicates").value == 3 and a.value("tiering.replicates_planned").value == 3
    assert a.value("tiering.tier_pool.learned_replicates").value == 2       # replicate 1 did not learn

    # SAS-only pool with the snapshot: one ratio per replicate (its own timeline's), the t interval over them
    sas = reps[(reps.pool == "sas_pool") & (reps.phase == "with")].sort_values("replicate")
    assert sas.ratio_pct.to_numpy() == pytest.approx(100 * np.array(SAS_WITH), rel=0.01)
    est, low, high = _t_interval(sas.ratio_pct / 100)
    v = a.value("tiering.sas_pool.with.ratio")
    assert (v.value, v.low, v.high) == pytest.approx((est, low, high), rel=1e-6)
    assert v.n == 3 and v.independent and v.scale == "pct_log"
    # the replicates' spread, not the first timeline's batch means (whose interval is a fraction of its width)
    first = a.phases[(a.phases.pool == "sas_pool") & (a.phases.phase == "with")].iloc[0]
    assert (first.ratio_high - first.ratio_low) < 0.25 * (high - low)

    # the tiered pool at the SSD tier's speed: each replicate's own fit of τ_hdd and its own shares
    tier = reps[(reps.pool == planmod.TIERED) & (reps.phase == "with")].sort_values("replicate")
    p0, p = TIER_SHARES["initial"], TIER_SHARES["with"]
    expected = [100 * tm.time_per_io_us(p0, TAU_SSD_TIER, h) / tm.time_per_io_us(p, TAU_SSD_TIER, h) for h in TAU_HDD]
    assert tier.at_tier_speed_pct.to_numpy() == pytest.approx(expected, rel=0.02)
    v = a.value("tiering.tier_pool.with.at_tier_speed")
    assert (v.value, v.low, v.high) == pytest.approx(_t_interval(tier.at_tier_speed_pct / 100), rel=1e-6)
    # the tiered pool's ratio over the SAS-only pool's, formed within each replicate: measured (C002-3), and the
    # model's at the SSD tier's speed
    v = a.value("tiering.tier_over_sas.with")
    assert (v.value, v.low, v.high) == pytest.approx(
        _t_interval(tier.ratio_pct.to_numpy() / sas.ratio_pct.to_numpy()), rel=1e-6)
    v = a.value("tiering.tier_over_sas.with_at_tier_speed")
    assert (v.value, v.low, v.high) == pytest.approx(
        _t_interval(tier.at_tier_speed_pct.to_numpy() / sas.ratio_pct.to_numpy()), rel=1e-6)
    # the tiered pool's initial rate against its own model's at the measured share (all on flash here)
    v = a.value("tiering.tier_pool.initial.model_rate_pct")
    assert v.n == 3 and v.value == pytest.approx(100 * TAU_SSD_TIER / TAU_SSD_MEASURED, rel=0.02)

    # the two pools' initial rates, both measured, paired within each replicate (C002-4): all on flash, 10 000 IOPS
    init = reps.drop_duplicates(["pool", "replicate"]).pivot(index="replicate", columns="pool", values="initial_iops")
    v = a.value("tiering.initial_over_sas")
    assert v.value == pytest.approx(100 * 1e6 / TAU_SSD_MEASURED / SAS_INITIAL, rel=0.02) and v.n == 3
    assert (v.value, v.low, v.high) == pytest.approx(_t_interval(init[planmod.TIERED] / init["sas_pool"]), rel=1e-6)

    verdicts = {o.claim.id: o for o in a.outcomes}
    assert verdicts["tiering.initial_over_sas"].claim.seed_label == "C002-4"
    assert all(not o.judgeable for o in a.outcomes), {o.claim.id: o.judgeable for o in a.outcomes}
    # 50-60 % against the seed's 12.2 ± 5: differs; 99-101 % against recovered (100 ± 10): agrees
    assert verdicts["tiering.C002-1a"].verdict == "differs"
    assert verdicts["tiering.C002-1c"].verdict == "agrees"


def test_one_replicate_is_not_judged_and_keeps_its_timelines_own_interval(tmp_path):
    a = an.analyse(make_run(tmp_path, 1))
    assert a.value("tiering.replicates").value == 1
    assert {o.claim.id for o in a.outcomes} == {f"tiering.C002-{c}" for c in ("1a", "1b", "1c", "2a", "2b", "2c",
                                                                               "3")} | {"tiering.initial_over_sas"}
    for o in a.outcomes:
        assert o.verdict == "not judged" and o.judgeable == "n < 3", (o.claim.id, o.judgeable)
    v = a.value("tiering.sas_pool.with.ratio")
    first = a.phases[(a.phases.pool == "sas_pool") & (a.phases.phase == "with")].iloc[0]
    assert (v.value, v.low, v.high) == pytest.approx((first.ratio_pct, first.ratio_low, first.ratio_high))
    assert v.n == 1 and v.has_interval and "within one timeline" in v.method
    assert claims.judgeable(v) == "n < 3"


def test_a_run_made_before_replicates_reads_as_one(tmp_path):
    record = make_run(tmp_path, 1, recorded=False)
    assert record.parameters(planmod.TieringParameters).scale.replicates == 1
    a = an.analyse(record)
    assert a.value("tiering.replicates_planned").value == 1
    assert all(o.judgeable == "n < 3" for o in a.outcomes)


def test_two_replicates_have_an_interval_from_their_spread_and_are_still_not_judged(tmp_path):
    a = an.analyse(make_run(tmp_path, 2))
    v = a.value("tiering.sas_pool.with.ratio")
    assert v.n == 2 and v.has_interval and v.independent
    assert all(o.judgeable == "n < 3" for o in a.outcomes)


def test_estimates_leave_out_a_replicate_without_a_fit():
    reps = pd.DataFrame(
        {"variant": ["tier_pool", "tier_pool@r1", "tier_pool@r2"], "pool": planmod.TIERED, "replicate": [0, 1, 2],
         "phase": "with", "iops": [10.0, 11.0, 12.0], "initial_iops": 100.0, "ratio_pct": [10.0, 11.0, 12.0],
         "at_tier_speed_pct": [4.0, math.nan, 5.0]})
    est = replicates.estimates(reps)
    assert est["tiering.tier_pool.with.at_tier_speed"].n == 2
    assert est["tiering.tier_pool.with.ratio"].n == 3
    assert "tiering.tier_over_sas.with" not in est           # no SAS-only pool measured
