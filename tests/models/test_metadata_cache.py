import numpy as np
import pytest

from snaptax.models import metadata_cache as mc


def test_formulas():
    assert mc.metadata_reads_per_io(0.25) == pytest.approx(0.75)
    assert mc.metadata_reads_per_io(1.0, mu=0.8) == pytest.approx(0.0)
    assert mc.slowdown(0.5, 0.1, 4.0) == pytest.approx(3.1)
    assert mc.slowdown(0.25, 0.1, 4.0, 0.5) == pytest.approx(3.1)
    assert mc.loss(mc.reads_for_loss(0.5, 0.1, 4.0, 0.7), 0.1, 4.0, 0.7) == pytest.approx(0.5)
    assert mc.loss(0.0, 0.25, 4.0) == pytest.approx(0.2)
    # the inverse: the reads at which the loss is L, and the coverage they mean
    m = mc.reads_for_loss(0.65, 0.1, 4.0)
    assert mc.loss(m, 0.1, 4.0) == pytest.approx(0.65)
    c = mc.coverage_for_loss(0.65, 0.1, 4.0, 0.9)
    assert mc.loss(mc.metadata_reads_per_io(c, 0.9), 0.1, 4.0) == pytest.approx(0.65)
    # a loss below the full-coverage floor needs a coverage above 1: reported, not clipped
    assert mc.coverage_for_loss(0.05, 0.1, 4.0, 1.0) > 1
    with pytest.raises(ValueError):
        mc.reads_for_loss(1.0, 0.1, 4.0)


def test_fits_recover_known_parameters_from_noisy_synthetic_data():
    rng = np.random.default_rng(3)
    mu, lambda0, kappa, alpha = 1.9, 0.2, 5.0, 0.6
    coverage = np.repeat([1 / 8, 1 / 2, 3 / 4, 7 / 8, 15 / 16, 1.0], 6)
    m = mc.metadata_reads_per_io(coverage, mu) + rng.normal(0, 0.003, coverage.size)
    m = np.clip(m, 0, None)
    s = mc.slowdown(m, lambda0, kappa, alpha) * rng.normal(1, 0.03, coverage.size)
    misses = mc.fit_misses(coverage, m)
    cost = mc.fit_cost(m, s)
    assert misses.ci95[0] <= mu <= misses.ci95[1] and misses.mu == pytest.approx(mu, rel=0.05)
    (llo, lhi), (klo, khi), (alo, ahi) = cost.ci95
    assert llo <= lambda0 <= lhi and klo <= kappa <= khi and alo <= alpha <= ahi
    assert cost.kappa == pytest.approx(kappa, rel=0.1) and cost.alpha == pytest.approx(alpha, rel=0.1)
    assert cost.r2 > 0.95
    # a linear truth is told apart from a concave one: α's interval excludes the other
    lin = mc.fit_cost(m, mc.slowdown(m, lambda0, kappa, 1.0) * rng.normal(1, 0.03, coverage.size))
    assert lin.ci95[2][0] <= 1.0 <= lin.ci95[2][1] and not alo <= 1.0 <= ahi
    true_c = mc.coverage_for_loss(0.65, lambda0, kappa, mu, alpha)
    implied = mc.implied_coverage(0.65, cost, misses)
    assert implied.reachable and implied.low <= true_c <= implied.high and implied.low < implied.coverage < implied.high
    assert implied.coverage == pytest.approx(true_c, abs=0.01)
    # a prediction's profile interval holds the truth
    s_hat, s_lo, s_hi = cost.slowdown_interval(0.3)
    assert s_lo < s_hat < s_hi and s_lo <= float(mc.slowdown(0.3, lambda0, kappa, alpha)) <= s_hi


def _synthetic(lambda0: float, seed: int, noise: float = 0.03):
    rng = np.random.default_rng(seed)
    coverage = np.repeat([1 / 8, 1 / 2, 3 / 4, 7 / 8, 15 / 16, 1.0], 4)
    m = mc.metadata_reads_per_io(coverage, 1.0)
    return coverage, m, (1 + lambda0 + 5.0 * m ** 0.6) * rng.normal(1, noise, coverage.size)


def test_a_bound_the_data_reach_is_the_estimate_and_an_interval_end_not_a_clip():
    """λ0 = 0 (a snapshot that costs nothing at full coverage), and data that would put it below 0 without the
    bound: the estimate is 0, the interval starts at 0 and holds the truth; κ and α are still recovered."""
    for lambda0 in (0.0, -0.04):
        _, m, s = _synthetic(lambda0, 7)
        cost = mc.fit_cost(m, s)
        assert cost.lambda0 >= 0 and cost.kappa >= 0
        lo, hi = cost.ci95[0]
        assert lo == 0.0 and hi > 0 and lo <= max(lambda0, 0.0) <= hi
        assert cost.ci95[1][0] <= 5.0 <= cost.ci95[1][1] and cost.ci95[2][0] <= 0.6 <= cost.ci95[2][1]
    assert "lambda0" in mc.fit_cost(*_synthetic(-0.04, 7)[1:]).at_bound


def test_implied_coverage_stays_in_0_1_or_says_it_cannot_be_reached():
    coverage, m, s = _synthetic(0.3, 5, noise=0.01)
    cost, misses = mc.fit_cost(m, s), mc.fit_misses(coverage, m)
    floor = 1 - 1 / 1.3                         # the loss at full coverage (23 %)
    below = mc.implied_coverage(floor / 2, cost, misses)
    assert not below.reachable and np.isnan(below.coverage)
    near = mc.implied_coverage(floor + 0.01, cost, misses)
    assert near.reachable and 0 <= near.low <= near.coverage <= near.high <= 1


def test_fits_refuse_data_that_cannot_identify_them():
    with pytest.raises(ValueError, match="two points"):
        mc.fit_misses(np.array([1.0, 1.0, 0.5]), np.array([0.0, 0.0, 0.5]))
    with pytest.raises(ValueError, match="four points"):
        mc.fit_cost(np.array([0.5, 0.5, 0.0, 0.0]), np.array([2.0, 2.1, 1.2, 1.1]))


def test_read_job_prediction_and_its_inverses_on_synthetic_counts():
    # one slice per miss: a read-only job at 1/8 coverage reads 1 + 7/8 host reads per guest read, none extra at 1
    assert mc.read_host_reads_per_read(1 / 8) == pytest.approx(1.875)
    assert mc.read_host_reads_per_read(1.0, slices_per_miss=3.0) == pytest.approx(1.0)
    assert mc.read_host_reads_per_read(np.array([0.5, 0.75]), 2.0) == pytest.approx([2.0, 1.5])
    # synthetic counters: 40 000 guest reads, each missing with probability 1 - c and a miss reading 1.02 slices
    c, s_r, reads = 1 / 8, 1.02, 40_000
    host = reads + (1 - c) * s_r * reads
    assert mc.read_slices_per_miss(host / reads, c) == pytest.approx(s_r)
    assert mc.read_slices_per_miss(mc.read_host_reads_per_read([0.5, 0.25], 1.3), [0.5, 0.25]) == \
        pytest.approx([1.3, 1.3])
    with pytest.raises(ValueError, match="below 1"):
        mc.read_slices_per_miss(1.0, 1.0)
    # a mixed job (read share r) whose reads miss as the read job's and whose writes read s_w slices per miss
    r, s_w, ios = 0.5, 2.8, 80_000
    m = (1 - c) * (r * ios * s_r + (1 - r) * ios * s_w) / ios
    assert mc.write_slices_per_miss(m, c, r, s_r) == pytest.approx(s_w)
    assert mc.write_slices_per_miss(m, c, 0.0, 5.0) == pytest.approx(m / (1 - c))     # a write-only job: all writes
    # with the same slices per miss for both, the write share is the miss model's mu
    assert mc.write_slices_per_miss(mc.metadata_reads_per_io(c, 1.9), c, 0.3, 1.9) == pytest.approx(1.9)
    for bad in ((m, 1.0, r, s_r), (m, c, 1.0, s_r), (m, c, -0.1, s_r)):
        with pytest.raises(ValueError):
            mc.write_slices_per_miss(*bad)
