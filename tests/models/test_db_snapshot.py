"""The database-snapshot cost model on synthetic data with known parameters."""
from __future__ import annotations

import numpy as np
import pytest

from snaptax.models import db_snapshot as m


def test_duration_is_base_plus_pages_times_per_page_cost():
    assert m.duration_s(0, 1000, 1.8, 1e-3, 4e-4) == pytest.approx(1.8)
    assert m.duration_s(1, 1000, 1.8, 1e-3, 4e-4) == pytest.approx(2.8)
    assert m.duration_s(2, 1000, 1.8, 1e-3, 4e-4) == pytest.approx(3.2)
    assert list(m.time_per_page_s(np.array([0, 1, 3]), 2.0, 0.5)) == [0.0, 2.0, 3.0]


def test_fit_recovers_known_parameters_and_their_intervals_cover_them():
    rng = np.random.default_rng(4)
    t0, tau1, tau2 = 1.8, 120e-6, 45e-6
    k = np.repeat([0, 1, 2], 10)
    pages = rng.normal(16000, 300, k.size).round()          # pages first-written vary a little per run
    y = m.duration_s(k, pages, t0, tau1, tau2) * rng.normal(1, 0.01, k.size)
    f = m.fit(k, pages, y)
    for est, (lo, hi), true in zip((f.t0_s, f.tau1_s, f.tau2_s), f.ci95, (t0, tau1, tau2), strict=True):
        assert lo <= true <= hi and lo < est < hi
    assert f.second_over_first == pytest.approx(tau2 / tau1, rel=0.25) and f.second_over_first < 1
    assert f.points == 30
    assert f.predict_s(2, 16000) == pytest.approx(t0 + 16000 * (tau1 + tau2), rel=0.02)


def test_a_second_snapshot_costing_as_much_as_the_first_is_told_apart():
    """The prediction τ2 < τ1 can fail: data made with τ2 = τ1 give an interval for τ2 that contains τ1."""
    rng = np.random.default_rng(9)
    k = np.repeat([0, 1, 2], 10)
    pages = np.full(k.size, 16000.0)
    y = m.duration_s(k, pages, 1.8, 100e-6, 100e-6) * rng.normal(1, 0.01, k.size)
    f = m.fit(k, pages, y)
    assert f.ci95[2][0] <= 100e-6 <= f.ci95[2][1]
    assert f.second_over_first == pytest.approx(1.0, abs=0.15)


def test_overlap_is_the_hidden_fraction_of_the_second_copy():
    assert m.overlap(tau2_s=50e-6, copy_s_per_page=200e-6) == pytest.approx(0.75)
    assert m.overlap(tau2_s=200e-6, copy_s_per_page=200e-6) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="positive"):
        m.overlap(1e-6, 0)


def test_fit_refuses_missing_snapshot_counts_and_ragged_input():
    with pytest.raises(ValueError, match="0, 1 and 2"):
        m.fit(np.array([0, 1, 1]), np.array([1.0, 2, 3]), np.array([1.0, 2, 3]))
    with pytest.raises(ValueError, match="same length"):
        m.fit(np.array([0, 1, 2]), np.array([1.0, 2]), np.array([1.0, 2, 3]))


def test_three_points_fit_exactly_without_intervals():
    f = m.fit(np.array([0, 1, 2]), np.array([100.0, 100, 100]), np.array([1.0, 2.0, 2.5]))
    assert (f.t0_s, f.tau1_s, f.tau2_s) == pytest.approx((1.0, 0.01, 0.005))
    assert all(np.isnan(x) for pair in f.ci95 for x in pair)
