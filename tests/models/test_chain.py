import numpy as np
import pytest

from snaptax.models import chain


def test_formula():
    assert chain.time_per_io_us(0, 10, 5, 2) == pytest.approx(10)
    assert chain.time_per_io_us(1, 10, 5, 2) == pytest.approx(15)
    assert chain.time_per_io_us(4, 10, 5, 2) == pytest.approx(21)
    assert chain.iops(0, 10, 5, 2) == pytest.approx(1e5)


def test_fit_recovers_known_parameters_from_noisy_synthetic_data():
    rng = np.random.default_rng(7)
    truth = (20.0, 150.0, 12.0)
    n = np.repeat(np.arange(0, 13), 3)
    iops = chain.iops(n, *truth) * rng.normal(1, 0.02, n.size)
    f = chain.fit(n, iops)
    for value, true, (lo, hi) in zip((f.tau0_us, f.tau1_us, f.tau_layer_us), truth, f.ci95, strict=False):
        assert lo <= true <= hi
        assert value == pytest.approx(true, rel=0.1)
    assert f.r2 > 0.95


def test_fit_needs_the_three_regimes():
    with pytest.raises(ValueError):
        chain.fit(np.array([0, 0, 1, 1]), np.array([1.0, 1, 1, 1]))
