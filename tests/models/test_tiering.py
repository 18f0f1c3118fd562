import numpy as np
import pytest

from snaptax.models import tiering as tm


def test_mix_is_harmonic_in_iops():
    # a tenth of the I/O on a tier 20x slower: τ = 0.9·50 + 0.1·1000 = 145 µs, 6897 IOPS (a third of 20000)
    assert tm.iops(0.9, 50.0, 1000.0) == pytest.approx(1e6 / 145.0)
    assert tm.iops(1.0, 50.0, 1000.0) == pytest.approx(20000.0)
    assert tm.iops(0.0, 50.0, 1000.0) == pytest.approx(1000.0)


def test_fit_recovers_known_parameters_with_intervals_covering_them():
    rng = np.random.default_rng(7)
    p = rng.uniform(0.0, 1.0, 200)
    true_ssd, true_hdd = 80.0, 900.0
    tau = tm.time_per_io_us(p, true_ssd, true_hdd) * rng.normal(1.0, 0.03, p.size)
    f = tm.fit(p, 1e6 / tau)
    (lo_s, hi_s), (lo_h, hi_h) = f.ci95
    assert lo_s < true_ssd < hi_s and lo_h < true_hdd < hi_h
    assert f.tau_ssd_us == pytest.approx(true_ssd, rel=0.1)
    assert f.tau_hdd_us == pytest.approx(true_hdd, rel=0.02)
    assert f.r2 > 0.95 and f.points == 200
    assert f.predict_iops(0.5) == pytest.approx(1e6 / (0.5 * f.tau_ssd_us + 0.5 * f.tau_hdd_us))


def test_fit_refuses_points_without_spread_of_share():
    with pytest.raises(ValueError, match="span"):
        tm.fit(np.array([0.0, 0.05, 0.1, 0.0]), np.array([1000.0, 1050.0, 1100.0, 990.0]))


def test_fit_drops_non_finite_points():
    p = np.array([0.0, 0.5, 1.0, np.nan, 0.25])
    f = tm.fit(p, tm.iops(np.nan_to_num(p), 100.0, 1000.0))
    assert f.points == 4
    assert f.tau_hdd_us == pytest.approx(1000.0)


def test_write_cache_share_serves_all_writes_from_flash():
    assert tm.write_cache_share(0.0, 0.8) == pytest.approx(0.2)
    assert tm.write_cache_share(1.0, 0.8) == pytest.approx(1.0)


def test_loss_duration_is_half_a_cycle_plus_migration():
    assert tm.loss_duration_s(86400.0, 40e9, 40e6) == pytest.approx(43200.0 + 1000.0)
    np.testing.assert_allclose(tm.loss_duration_s(np.array([3600.0, 300.0]), 0.0, 1.0), [1800.0, 150.0])
