"""Intervals against known distributions: coverage, pairing, sample-size planning."""
import math

import numpy as np
import pytest

from snaptax import stats


def test_t_interval_covers_the_true_mean_about_95_percent():
    rng = np.random.default_rng(1)
    covered = 0
    trials = 4000
    for _ in range(trials):
        iv = stats.mean_interval(rng.normal(10.0, 2.0, 4))
        covered += iv.low <= 10.0 <= iv.high
    assert 0.93 < covered / trials < 0.97


def test_t_interval_matches_the_textbook_value():
    iv = stats.mean_interval([1.0, 2.0, 3.0])
    # mean 2, s = 1, t(2, 0.975) = 4.302653
    assert iv.estimate == 2.0
    assert iv.half_width == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)


def test_one_sample_has_no_interval():
    iv = stats.mean_interval([5.0])
    assert iv.estimate == 5.0 and iv.n == 1 and not iv.defined


def test_geometric_mean_interval_matches_a_hand_computation():
    x = [100.0, 200.0, 400.0]
    # logs: ln100 + (0, ln2, 2 ln2): mean ln200, s_log = ln2; t(2, 0.975) = 4.302653
    iv = stats.geometric_mean_interval(x)
    half = 4.302653 * math.log(2) / math.sqrt(3)
    assert iv.estimate == pytest.approx(200.0) and iv.n == 3 and iv.method == "log t"
    assert (iv.low, iv.high) == pytest.approx((200.0 * math.exp(-half), 200.0 * math.exp(half)), rel=1e-6)


def test_geometric_mean_interval_stays_positive_where_the_linear_one_does_not():
    x = [20.0, 300.0]                         # two repeats far apart: the linear interval reaches below zero
    assert stats.mean_interval(x).low < 0
    iv = stats.geometric_mean_interval(x)
    assert 0 < iv.low < iv.estimate < iv.high
    assert iv.estimate == pytest.approx(math.sqrt(20.0 * 300.0))
    rng = np.random.default_rng(4)
    for _ in range(200):
        iv = stats.geometric_mean_interval(np.exp(rng.normal(0, 2.0, 2)))
        assert iv.low > 0


def test_geometric_mean_interval_needs_two_samples():
    one = stats.geometric_mean_interval([5.0])
    assert one.estimate == pytest.approx(5.0) and one.n == 1 and not one.defined
    assert math.isnan(one.low) and math.isnan(one.high)
    none = stats.geometric_mean_interval([])
    assert none.n == 0 and math.isnan(none.estimate)
    assert stats.geometric_mean_interval([2.0, math.nan, 8.0]).estimate == pytest.approx(4.0)   # nan left out


def test_geometric_mean_interval_falls_back_to_the_linear_one_on_a_zero():
    """A rate of 0 is a measurement: the group keeps it and gets the linear interval, which says so."""
    x = [0.0, 10.0, 20.0]
    iv, lin = stats.geometric_mean_interval(x), stats.mean_interval(x)
    assert (iv.estimate, iv.low, iv.high, iv.n) == (lin.estimate, lin.low, lin.high, 3)
    assert iv.method == "t (linear: a sample <= 0)"


def test_geometric_mean_interval_covers_the_true_median_of_lognormal_repeats():
    """Lognormal repeats (multiplicative noise) around a median of 1000: the log-t interval covers the median
    about 95 % of the time, with three repeats."""
    rng = np.random.default_rng(6)
    trials = 2000
    samples = 1000.0 * np.exp(rng.normal(0, 0.3, (trials, 3)))
    covered = sum(iv.low <= 1000.0 <= iv.high for iv in map(stats.geometric_mean_interval, samples))
    assert 0.93 < covered / trials < 0.97


def test_pairing_cancels_shared_drift():
    drift = np.array([1.0, 1.3, 0.8, 1.1])          # the disk's speed, shared by both members of a pair
    a, b = 0.5 * 1000 * drift, 1000 * drift
    iv = stats.paired_ratio_interval(a, b)
    assert iv.estimate == pytest.approx(0.5) and iv.half_width == pytest.approx(0.0, abs=1e-12)
    unpaired = stats.ratio_of_means_interval(a, b)
    assert unpaired.half_width > 0.05


def test_paired_ratio_coverage_on_lognormal_noise():
    rng = np.random.default_rng(2)
    covered, trials = 0, 3000
    for _ in range(trials):
        b = 1000 * np.exp(rng.normal(0, 0.05, 5))
        a = 0.7 * b * np.exp(rng.normal(0, 0.05, 5))
        iv = stats.paired_ratio_interval(a, b)
        covered += iv.low <= 0.7 <= iv.high
    assert 0.93 < covered / trials < 0.97


def test_scaled_interval_turns_a_ratio_into_a_loss():
    iv = stats.Interval(0.4, 0.35, 0.5, 3, "t").scaled(-100, 100)
    assert (iv.estimate, iv.low, iv.high) == pytest.approx((60, 50, 65))


def test_repeats_for_a_target_width():
    n = stats.repeats_for(cv=0.05, half_width=0.05)
    assert n >= 3
    assert stats.repeats_for(cv=0.05, half_width=0.01) > n


def test_ratio_across_time_covers_when_drift_dominates():
    """Eight runs spread over minutes (each at its own level of the drifting disk) against two neighbouring runs
    later (sharing one level): the interval covers the true ratio (1) about 95 % of the time, where a ratio of
    means that takes the neighbours as independent does not."""
    rng = np.random.default_rng(3)
    covered = welch = 0
    trials = 3000
    for _ in range(trials):
        earlier = 1000 * np.exp(rng.normal(0, 0.15, 8) + rng.normal(0, 0.01, 8))
        later = 1000 * np.exp(rng.normal(0, 0.15) + rng.normal(0, 0.01, 2))
        iv = stats.ratio_across_time_interval(later, earlier)
        covered += iv.low <= 1.0 <= iv.high
        naive = stats.ratio_of_means_interval(later, earlier)
        welch += naive.low <= 1.0 <= naive.high
    assert 0.92 < covered / trials < 0.975
    assert welch / trials < 0.7


def test_ratio_across_time_needs_two_earlier_runs():
    iv = stats.ratio_across_time_interval([1.0, 1.1], [1.0])
    assert iv.estimate == pytest.approx(1.05) and not iv.defined


def test_proportion_interval_is_the_exact_binomial_one():
    iv = stats.proportion_interval([1, 0])
    assert iv.estimate == 0.5 and iv.n == 2
    assert iv.low == pytest.approx(0.0126, abs=1e-4) and iv.high == pytest.approx(0.9874, abs=1e-4)
    none = stats.proportion_interval([0, 0, 0])
    assert none.low == 0.0 and none.high == pytest.approx(0.7076, abs=1e-4)   # 1 - 0.025**(1/3)
    assert stats.proportion_interval([1, 1]).high == 1.0
    assert not stats.proportion_interval([1]).defined


def test_proportion_interval_covers_about_95_percent_or_more():
    rng = np.random.default_rng(3)
    hits = sum(iv.low <= 0.3 <= iv.high
               for iv in (stats.proportion_interval(rng.random(20) < 0.3) for _ in range(400)))
    assert hits / 400 >= 0.93


def test_pooled_log_sd_and_ratio_interval_cover_the_true_ratio():
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(300):
        groups = [np.exp(rng.normal(np.log(100.0 * (0.8 if k else 1.0)), 0.2, 2)) for k in range(6)]
        sd, dof = stats.pooled_log_sd(groups)
        assert dof == 6
        iv = stats.pooled_log_ratio_interval(groups[3], groups[0], sd, dof)
        hits += iv.low <= 0.8 <= iv.high
    assert 0.9 <= hits / 300 <= 0.99


def test_pooled_ratio_without_spread_has_no_interval():
    iv = stats.pooled_log_ratio_interval([2.0], [1.0], math.nan, 0)
    assert iv.estimate == pytest.approx(2.0) and not iv.defined


def test_least_squares_recovers_a_line_and_has_no_interval_when_exact():
    import numpy as np

    from snaptax.stats import least_squares
    x = np.arange(10.0)
    y = 2 + 3 * x + np.random.default_rng(1).normal(0, 0.1, 10)
    ls = least_squares(np.column_stack([np.ones_like(x), x]), y)
    assert ls.dof == 8 and ls.r2 > 0.99
    assert all(lo < true < hi for (lo, hi), true in zip(ls.ci, (2, 3), strict=True))
    exact = least_squares(np.column_stack([np.ones(2), [0.0, 1.0]]), np.array([1.0, 2.0]))
    assert exact.beta == pytest.approx((1.0, 1.0)) and all(np.isnan(v) for ci in exact.ci for v in ci)


def _chain_design(n):
    return np.column_stack([np.ones_like(n), (n >= 1).astype(float), np.maximum(n - 1, 0)])


def test_bounded_least_squares_is_least_squares_where_no_bound_is_active():
    n = np.array([0, 0, 1, 1, 2, 3, 4, 5] * 2, dtype=float)
    x = _chain_design(n)
    y = x @ [100.0, 20.0, 5.0] + np.random.default_rng(1).normal(0, 3, len(n))
    plain, bounded = stats.least_squares(x, y), stats.bounded_least_squares(x, y, 0.0)
    assert bounded.beta == pytest.approx(plain.beta) and not any(bounded.at_bound)
    # the profile-likelihood interval of a linear model is its t interval
    assert np.asarray(bounded.ci) == pytest.approx(np.asarray(plain.ci), rel=1e-6)


def test_bounded_least_squares_stops_at_the_bound_without_clipping():
    n = np.array([0, 0, 1, 1, 2, 3, 4, 5] * 2, dtype=float)
    x = _chain_design(n)
    y = x @ [100.0, 0.0, -1.0] + np.random.default_rng(1).normal(0, 3, len(n))
    plain, bounded = stats.least_squares(x, y), stats.bounded_least_squares(x, y, 0.0)
    assert plain.beta[2] < 0                                   # unbounded, a layer would remove work
    assert bounded.beta[2] == pytest.approx(0.0, abs=1e-9) and bounded.at_bound[2]
    assert min(bounded.beta) >= 0
    low, high = bounded.ci[2]
    assert low == 0.0 and 0 < high < plain.ci[2][1] + 1       # the profile's end, not the t interval's
    assert all(lo >= 0 for lo, _ in bounded.ci)
    # the RSS at each end of a free coefficient's interval is the cut (the profile is exact, not clipped)
    rss = float(np.sum((y - x @ np.asarray(bounded.beta)) ** 2))
    cut = rss * (1 + float(stats.sps.f.ppf(0.95, 1, bounded.dof)) / bounded.dof)
    for v in bounded.ci[0]:
        assert stats._profile_rss(x, y, np.zeros(3), 0, v) == pytest.approx(cut, rel=1e-6)


def test_bounded_least_squares_recovers_known_parameters_in_repeated_samples():
    n = np.array([0, 0, 1, 1, 2, 3, 4, 5], dtype=float)
    x = _chain_design(n)
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(200):
        b = stats.bounded_least_squares(x, x @ [100.0, 20.0, 5.0] + rng.normal(0, 3, len(n)), 0.0)
        hits += all(lo <= t <= hi for (lo, hi), t in zip(b.ci, (100.0, 20.0, 5.0), strict=True))
    assert hits / 200 > 0.8           # three 95 % intervals together: about 0.86 if independent


def test_bounded_least_squares_has_no_interval_when_exact():
    b = stats.bounded_least_squares(np.column_stack([np.ones(2), [0.0, 1.0]]), np.array([1.0, 2.0]), 0.0)
    assert b.beta == pytest.approx((1.0, 1.0)) and all(np.isnan(v) for ci in b.ci for v in ci)


def test_ratio_of_ratios_interval_adds_log_half_widths_in_quadrature():
    # log half-widths 0.3 and 0.4 combine to 0.5 (a 3-4-5 triangle)
    a, b = (math.exp(-0.3), math.exp(0.3)), (2 * math.exp(-0.4), 2 * math.exp(0.4))
    iv = stats.ratio_of_ratios_interval(2.0, a, b, 3, "combined")
    assert (iv.estimate, iv.n, iv.method) == (2.0, 3, "combined")
    assert (iv.low, iv.high) == pytest.approx((2 * math.exp(-0.5), 2 * math.exp(0.5)))
    # one interval a point: the other's half-width alone, about the estimate
    iv = stats.ratio_of_ratios_interval(5.0, (1.0, 4.0), (3.0, 3.0), 2)
    assert (iv.low, iv.high) == pytest.approx((2.5, 10.0)) and iv.method.startswith("ratio of ratios")


@pytest.mark.parametrize("end", [math.nan, math.inf, 0.0, -1.0])
def test_ratio_of_ratios_without_both_intervals_has_none(end):
    iv = stats.ratio_of_ratios_interval(1.5, (end, 2.0), (0.5, 2.0), 4)
    assert iv.estimate == 1.5 and iv.n == 4 and iv.method == "ratio of ratios" and not iv.defined
    assert math.isnan(iv.low) and math.isnan(iv.high)


def test_a_profile_end_is_the_crossing_the_bound_or_none():
    cut = lambda v: v * v - 4.0      # noqa: E731  the profile's excess: within the cut on (−2, 2)
    assert stats.profile_end(cut, 0.0, 0.5, +1, math.inf) == pytest.approx(2.0)
    assert stats.profile_end(cut, 0.0, 0.5, -1, -1.0) == -1.0          # within the cut up to the bound
    assert stats.profile_end(cut, 0.0, 0.5, -1, -3.0) == pytest.approx(-2.0)   # the crossing lies before the bound
    assert stats.profile_end(lambda v: -1.0, 0.0, 1.0, +1, math.inf, max_doublings=8) == math.inf   # never leaves it


def test_a_profile_point_never_rests_on_an_inner_fit_that_did_not_converge(monkeypatch):
    import scipy.optimize
    real = scipy.optimize.lsq_linear

    def lsq_linear(a, b, **kw):       # the inner fits (one coefficient held) report no convergence
        res = real(a, b, **kw)
        if a.shape[1] < 3:
            res.success, res.message = False, "made to fail"
        return res
    monkeypatch.setattr(scipy.optimize, "lsq_linear", lsq_linear)
    n = np.array([0, 0, 1, 1, 2, 3, 4, 5] * 2, dtype=float)
    x = _chain_design(n)
    y = x @ [100.0, 20.0, 5.0] + np.random.default_rng(1).normal(0, 3, len(n))
    with pytest.raises(stats.ProfileFitError, match="coefficient 0 .*made to fail"):
        stats.bounded_least_squares(x, y, 0.0)
    assert issubclass(stats.ProfileFitError, ValueError)

    def excess(v: float) -> float:     # a profile whose inner fit fails beyond 1: no end is made of it
        if v > 1:
            raise stats.ProfileFitError(f"inner fit at {v}")
        return v * v - 4.0
    with pytest.raises(stats.ProfileFitError):
        stats.profile_end(excess, 0.0, 0.5, +1, math.inf)
    assert stats.profile_end(excess, 0.0, 0.5, -1, -1.0) == -1.0      # the side that converges is unaffected
