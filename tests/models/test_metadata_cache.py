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
    est, lo, hi = mc.coverage_for_loss_interval(0.65, cost, misses)
    assert lo <= true_c <= hi and lo < est < hi
    assert mc.coverage_for_loss_interval(0.65, cost, misses) == (est, lo, hi)      # deterministic


def test_fits_refuse_data_that_cannot_identify_them():
    with pytest.raises(ValueError, match="two points"):
        mc.fit_misses(np.array([1.0, 1.0, 0.5]), np.array([0.0, 0.0, 0.5]))
    with pytest.raises(ValueError, match="four points"):
        mc.fit_cost(np.array([0.5, 0.5, 0.0, 0.0]), np.array([2.0, 2.1, 1.2, 1.1]))
