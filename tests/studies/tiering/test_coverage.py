"""The SAS-only pool's coverage sweep read into keep per coverage and seed 002's operating point (issue 46.4)."""
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from snaptax.studies.tiering import coverage as cov, plan as planmod

DISK = 384 << 20
F = Fraction


def _run(variant, phase, iops, t0):
    # 9 s of one rate (the first second, fio starting, is left out: tables.phase_samples)
    return pd.DataFrame({"pool": variant, "phase": phase, "index": 1, "t_s": t0 + np.arange(1, 10),
                         "t_in_phase_s": np.arange(1.0, 10.0), "iops": [999.0] + [iops] * 8, "ssd_share": 0.0})


def _sweep(keeps: dict[Fraction, list[float]], initial=1000.0):
    """A run's seconds and measurements tables with one sweep per replicate: keeps[c][r] in % of `initial`."""
    seconds, meas = [], []
    replicates = len(next(iter(keeps.values())))
    for r in range(replicates):
        variant = planmod.sweep_variant(r)
        runs = [("initial", initial)] + [(planmod.sweep_phase(p, c), initial * k[r] / 100)
                                         for c, k in keeps.items() for p in ("settle", "with")] + [("after", initial)]
        for i, (phase, iops) in enumerate(runs):
            seconds.append(_run(variant, phase, iops, 100.0 * i))
            meas.append({"pool": variant, "phase": phase, "deletion": None})
    return pd.concat(seconds, ignore_index=True), pd.DataFrame(meas)


def _values(keeps):
    seconds, meas = _sweep(keeps)
    summary = cov.sweep_summary(cov.sweep_table(seconds, meas, DISK))
    return summary, {v.key: v for v in cov.sweep_values(summary)}


def test_keep_is_each_coverages_with_run_over_the_sweeps_initial_run():
    seconds, meas = _sweep({F(1, 12): [10.0, 12.0], F(1): [90.0, 80.0]})
    t = cov.sweep_table(seconds, meas, DISK)
    assert list(t.variant) == ["sas_pool.sweep", "sas_pool.sweep", "sas_pool.sweep@r1", "sas_pool.sweep@r1"]
    np.testing.assert_allclose(t.keep_pct, [10.0, 90.0, 12.0, 80.0])
    assert sorted(set(t.realised)) == pytest.approx([1 / 12, 1.0])


def test_the_point_is_where_keep_crosses_the_seeds_share_between_the_coverages_that_bracket_it():
    keeps = {F(1, 12): [8.0, 8.2, 7.8], F(1, 6): [16.0, 16.4, 15.6], F(1, 2): [50.0, 51.0, 49.0],
             F(1): [90.0, 91.0, 89.0]}
    summary, v = _values(keeps)
    assert list(summary.label) == ["1-12", "1-6", "1-2", "1-1"]
    # keep's mean (geometric, over the replicates) at 1/12 and 1/6 brackets 12.24 %
    k0, k1 = summary.keep_pct.iloc[0], summary.keep_pct.iloc[1]
    expected = 1 / 12 + (planmod.SEED_SAS_KEEP_PCT - k0) / (k1 - k0) * (1 / 6 - 1 / 12)
    point = v["tiering.implied.coverage"]
    assert point.value == pytest.approx(expected)
    assert point.low < point.value < point.high            # the upper keep curve crosses at the lesser coverage
    assert point.n == 3
    assert v["tiering.implied.bound"].text == "inside the sweep"
    assert v["tiering.implied.within_heap_bound"].text == "yes"
    assert v["tiering.sweep.keep.1-2"].value == pytest.approx(50.0, rel=1e-3)
    assert v["tiering.sweep.least.coverage"].value == pytest.approx(1 / 12)
    assert v["tiering.sweep.greatest.keep"].has_interval


def test_a_sweep_whose_least_cache_keeps_more_than_the_seed_points_at_the_least_cache_and_says_so():
    summary, v = _values({F(1, 12): [40.0, 41.0, 39.0], F(1, 4): [60.0, 61.0, 59.0], F(1): [90.0, 91.0, 89.0]})
    assert v["tiering.implied.coverage"].value == 0.0      # constrained: QEMU's least cache is the nearest setting
    assert v["tiering.implied.bound"].text.startswith("below the sweep's least coverage")
    assert cov.implied_coverage(summary)[0] == -math.inf


def test_a_point_beyond_the_seed_systems_heap_bound_is_marked():
    _, v = _values({F(1, 12): [2.0, 2.1, 1.9], F(1, 4): [5.0, 5.1, 4.9], F(1, 2): [20.0, 20.5, 19.5],
                    F(1): [90.0, 91.0, 89.0]})
    assert v["tiering.implied.coverage"].value > planmod.HEAP_BOUND
    assert v["tiering.implied.within_heap_bound"].text == "no"


def test_one_sweep_gives_keep_without_an_interval_and_a_point_without_one():
    _, v = _values({F(1, 12): [8.0], F(1, 6): [16.0], F(1): [90.0]})
    assert v["tiering.sweep.keep.1-12"].n == 1 and not v["tiering.sweep.keep.1-12"].has_interval
    point = v["tiering.implied.coverage"]
    assert math.isfinite(point.value) and math.isnan(point.low) and math.isnan(point.high)


def test_a_run_without_a_sweep_has_only_the_designs_constants():
    meas = pd.DataFrame({"pool": ["sas_pool"], "phase": ["initial"], "deletion": [None]})
    seconds = _run("sas_pool", "initial", 100.0, 0.0)
    v = {x.key: x for x in cov.sweep_values(cov.sweep_summary(cov.sweep_table(seconds, meas, DISK)))}
    assert set(v) == {"tiering.sweep.design_coverages", "tiering.sweep.seed_keep_pct", "tiering.implied.heap_bound"}
    assert v["tiering.sweep.design_coverages"].text == "1/12, 1/6, 1/4, 1/2 and 1"


def test_the_realised_coverage_is_the_one_the_run_recorded():
    seconds, meas = _sweep({F(1, 12): [8.0], F(1): [90.0]})
    events = [{"variant": "sas_pool.sweep", "event": "snapshot", "coverage": "1/12", "realised": 0.1},
              {"variant": "sas_pool.sweep@r1", "event": "snapshot", "coverage": "1", "realised": 0.5}]
    t = cov.sweep_table(seconds, meas, DISK, events)
    assert list(t.realised) == pytest.approx([0.1, 1.0])      # recorded for its own variant, else the plan's rounding


def test_the_arrays_queue_and_busy_share_are_the_with_runs_means_over_the_sweeps():
    seconds, meas = _sweep({F(1, 12): [10.0, 12.0], F(1): [90.0, 80.0]})
    with_low = meas.phase == planmod.sweep_phase("with", F(1, 12))
    meas["device_queue"] = np.where(meas.phase == "initial", 15.0, np.where(with_low, 1.5, 14.0))
    meas.loc[with_low & (meas.pool == planmod.sweep_variant(1)), "device_queue"] = 2.5
    meas["member_busy_pct"] = np.where(with_low, 25.0, 85.0)
    summary = cov.sweep_summary(cov.sweep_table(seconds, meas, DISK))
    assert list(summary.device_queue) == pytest.approx([2.0, 14.0])
    assert list(summary.initial_device_queue) == pytest.approx([15.0, 15.0])
    v = {x.key: x for x in cov.sweep_values(summary)}
    assert v["tiering.sweep.least.device_queue"].value == pytest.approx(2.0)
    assert v["tiering.sweep.greatest.member_busy_pct"].value == pytest.approx(85.0)
    assert v["tiering.sweep.initial_device_queue"].value == pytest.approx(15.0)


def test_the_heap_bound_is_judged_on_the_points_interval():
    b = planmod.HEAP_BOUND
    assert cov.heap_bound_side(b - 0.05, b - 0.1, b - 0.01) == "yes"
    assert cov.heap_bound_side(b + 0.05, b + 0.01, b + 0.1) == "no"
    assert cov.heap_bound_side(b - 0.01, b - 0.05, b + 0.05) == "undecided"     # the point alone would say yes
    assert cov.heap_bound_side(b + 0.01, math.nan, math.nan) == "no"            # one sweep: the point alone
    assert cov.heap_bound_side(math.nan, math.nan, math.nan) == "n/a"
