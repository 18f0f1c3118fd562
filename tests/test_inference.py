"""Estimates over independent replicates: intervals on every scale, the one-sided tests the verdict rule makes at
their boundaries, Holm's adjustment and the power of two one-sided tests."""
import math

import numpy as np
import pytest
from scipy import stats as sps

from snaptax import inference as inf


def test_intervals_map_through_the_scale_and_stay_in_range():
    e = inf.ratio_estimate([50, 55, 60], [100, 100, 100], "loss_log")
    lo, hi = e.interval(0.95)
    assert lo < e.value < hi < 100 and e.value == pytest.approx(100 * (1 - math.exp(np.log([.5, .55, .6]).mean())))
    g = inf.geometric_estimate([90.0, 100.0, 110.0])
    glo, ghi = g.interval(0.95)
    assert 0 < glo < g.value < ghi and g.scale == "log"
    m = inf.mean_estimate([1.0, 2.0, 3.0])
    assert m.interval(0.95) == pytest.approx((2 - sps.t.ppf(0.975, 2) / math.sqrt(3), 2 + sps.t.ppf(0.975, 2)
                                              / math.sqrt(3)))
    assert m.interval(0.90)[1] < m.interval(0.95)[1]
    c = inf.log_estimate(np.log([1.04, 1.06, 1.05]), "chg_log")     # a change per step, replicates on the log pivot
    clo, chi = c.interval(0.95)
    assert -100 < clo < c.value < chi and c.value == pytest.approx(100 * (math.exp(np.log([1.04, 1.06, 1.05]).mean())
                                                                          - 1))
    with pytest.raises(ValueError):
        inf.log_estimate([0.1, 0.2], "linear")
    for scale in inf.SCALES:
        for y in (0.5, 1.0, 50.0):
            assert inf.forward(scale, inf.inverse(scale, y)) == pytest.approx(y)


def test_the_one_sided_tests_switch_exactly_where_the_intervals_touch_the_band():
    """p_within < 0.05 ⟺ the 90 % interval lies inside; p_outside < 0.025 ⟺ the 95 % interval lies outside; on
    every scale, including the decreasing loss."""
    for scale, samples in (("linear", [9.0, 10.0, 11.0, 10.5]), ("loss_log", [0.3, 0.35, 0.32, 0.31]),
                           ("chg_log", [1.3, 1.35, 1.32, 1.31])):
        e = (inf.mean_estimate(samples) if scale == "linear"
             else inf.ratio_estimate(samples, [1.0] * 4, scale))
        lo90, hi90 = e.interval(0.90)
        lo95, hi95 = e.interval(0.95)
        eps = 1e-6 * (hi95 - lo95)
        assert e.p_within(lo90 - eps, hi90 + eps) < 0.05 < e.p_within(lo90 + eps, hi90 + eps)
        assert e.p_outside(hi95 + eps, hi95 + 10) < 0.025 < e.p_outside(hi95 - eps, hi95 + 10)
        assert e.p_outside(lo95 - 10, lo95 - eps) < 0.025 < e.p_outside(lo95 - 10, lo95 + eps)
        assert e.p_beyond(lo90 - eps, +1) < 0.05 < e.p_beyond(lo90 + eps, +1)


def test_holm_adjusts_a_family_step_down_and_leaves_nan_out():
    assert inf.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    adj = inf.holm([0.02, math.nan, 0.2])
    assert adj[0] == pytest.approx(0.04) and math.isnan(adj[1]) and adj[2] == pytest.approx(0.2)


def test_tost_power_matches_simulation_and_the_replicates_reach_it():
    rng = np.random.default_rng(3)
    n, sd, margin = 5, 1.0, 1.5
    hits = 0
    for _ in range(4000):
        e = inf.mean_estimate(rng.normal(0, sd, n))
        hits += e.p_within(-margin, margin) < 0.05
    assert inf.tost_power(n, sd, margin) == pytest.approx(hits / 4000, abs=0.03)
    need = inf.tost_replicates(sd, margin, 0.8)
    assert need is not None and inf.tost_power(need, sd, margin) >= 0.8 > inf.tost_power(need - 1, sd, margin)
    assert inf.tost_replicates(sd, 0.0) is None                   # no margin: no n is enough


def test_a_value_keeps_its_pivot_through_json():
    from snaptax.values import Value
    e = inf.ratio_estimate([60.0, 64.0, 70.0], [100.0, 100.0, 100.0], "loss_log")
    v = Value.of_estimate("s.loss", e, "%", 1)
    back = Value.from_json(v.to_json())
    assert back.estimate is not None and back.estimate.pivot == pytest.approx(e.pivot)
    assert (back.estimate.se, back.estimate.dof, back.estimate.scale) == (e.se, e.dof, "loss_log")
    assert back.independent and back.n == 3 and (back.low, back.high) == pytest.approx(e.interval(0.95))
    assert Value("s.x", 1.0).estimate is None
