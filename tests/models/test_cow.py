"""The copy-on-write amplification model: mechanisms, expected first writes, and the fit on synthetic data."""
import numpy as np
import pytest

from snaptax.models import cow

K = 1024


def test_copy_bytes_per_mechanism():
    # copy-out: the whole old grain is read and written elsewhere, whatever the write covers
    assert [float(x) for x in cow.copy_bytes(8 * K, 4 * K, "copy-out")] == [8 * K, 8 * K]
    assert [float(x) for x in cow.copy_bytes(4 * K, 4 * K, "copy-out")] == [4 * K, 4 * K]
    # redirect-copy (dm-thin): whole chunk copied unless the write covers it
    assert [float(x) for x in cow.copy_bytes(64 * K, 4 * K, "redirect-copy")] == [64 * K, 64 * K]
    assert [float(x) for x in cow.copy_bytes(64 * K, 64 * K, "redirect-copy")] == [0, 0]
    # redirect-merge (qcow2): the rest of the cluster written with the guest data; one merged read of the whole
    # cluster except at its two edge positions (of 16): 64 KiB − 2·4 KiB/16
    assert [float(x) for x in cow.copy_bytes(64 * K, 4 * K, "redirect-merge")] == [64 * K - 512, 60 * K]
    assert [float(x) for x in cow.copy_bytes(8 * K, 4 * K, "redirect-merge")] == [4 * K, 4 * K]
    assert [float(x) for x in cow.copy_bytes(128 * K, 32 * K, "redirect-merge")] == [96 * K, 96 * K]
    assert float(cow.first_write_bytes(64 * K, 4 * K, "redirect-merge", 512)) == 4 * K + 124 * K - 512 + 512
    with pytest.raises(ValueError, match="mode"):
        cow.copy_bytes(K, K, "bogus")


def test_expected_grains_hit_limits_and_replacement():
    vol, b = 64 << 20, 4 * K
    # one write hits one grain; grains of one block: every write (no repeats) is a first write
    assert float(cow.expected_grains_hit(1, vol, 64 * K, b)) == pytest.approx(1.0)
    assert float(cow.expected_grains_hit(500, vol, 4 * K, b)) == pytest.approx(500.0)
    # a whole pass breaks every grain
    n = vol // (1 << 20)
    assert float(cow.expected_grains_hit(vol // b, vol, 1 << 20, b)) == pytest.approx(n)
    # without replacement ≥ with replacement (no block is hit twice)
    k = np.array([100, 1000, 5000])
    assert np.all(cow.expected_grains_hit(k, vol, 64 * K, b) >= cow.expected_grains_hit(k, vol, 64 * K, b, True))
    # the fraction falls as grains fill up
    f = cow.first_write_fraction(k, vol, 1 << 20, b)
    assert np.all(np.diff(f) < 0) and float(f[0]) <= 1


def test_expected_grains_hit_matches_simulation():
    rng = np.random.default_rng(1)
    vol, g, b, k = 4 << 20, 64 * K, 4 * K, 200
    blocks = vol // b
    sims = [len(set(rng.choice(blocks, k, replace=False) // (g // b))) for _ in range(400)]
    assert np.mean(sims) == pytest.approx(float(cow.expected_grains_hit(k, vol, g, b)), rel=0.01)


@pytest.mark.parametrize("mode", cow.MODES)
def test_fit_recovers_known_parameters(mode):
    rng = np.random.default_rng(7)
    grains = np.repeat([8 * K, 16 * K, 64 * K, 256 * K], 3)
    f = np.tile([0.0, 0.9, 0.3], 4)
    c_true, m_true = 1.1, 6000.0
    y = cow.bytes_per_write(f, grains, 4 * K, mode, c_true, m_true) + rng.normal(0, 200.0, len(f))
    fit = cow.fit(f, grains, 4 * K, y, mode)
    assert not fit.copy_factor_fixed
    assert fit.copy_factor == pytest.approx(c_true, rel=0.02)
    assert fit.metadata_bytes == pytest.approx(m_true, abs=2000)
    (clo, chi), (mlo, mhi) = fit.ci95
    assert clo <= c_true <= chi and mlo <= m_true <= mhi
    assert fit.r2 > 0.99 and fit.points == 8    # the f = 0 points carry no information
    assert np.allclose(fit.predict(f, grains, 4 * K), y, atol=1000)


def test_fit_with_one_grain_fixes_the_copy_factor():
    f = np.array([0.0, 0.5, 0.97, 0.0])
    y = cow.bytes_per_write(f, 64 * K, 4 * K, "redirect-copy", 1.0, 3000.0) + np.array([0, 40, -40, 0])
    fit = cow.fit(f, 64 * K, 4 * K, y, "redirect-copy")
    assert fit.copy_factor_fixed and fit.copy_factor == 1.0 and fit.points == 2
    assert fit.metadata_bytes == pytest.approx(3000.0, abs=200)
    assert np.all(np.isfinite(fit.ci95[1]))
    exact = cow.fit(f[:2], 64 * K, 4 * K, y[:2], "redirect-copy")   # one point, one parameter: no interval
    assert np.isnan(exact.ci95[1][0])


def test_fit_needs_first_writes():
    with pytest.raises(ValueError, match="first_fraction"):
        cow.fit([0, 0], 8 * K, 4 * K, [4096, 4096], "copy-out")


def test_mechanism_table_matches_first_write_bytes():
    from snaptax.models import cow
    table = cow.mechanism_table([4096, 65536], 4096)
    assert set(table) == set(cow.MODES)
    assert table["copy-out"] == [int(cow.first_write_bytes(4096, 4096, "copy-out")),
                                 int(cow.first_write_bytes(65536, 4096, "copy-out"))]
