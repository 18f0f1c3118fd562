"""The consolidation convergence model: closed forms against the simulation, and the fits recover known
parameters from synthetic iteration data."""
import math

import numpy as np
import pytest

from snaptax.models import consolidation as m

MiB = 1 << 20


def test_closed_form_iterations_match_the_simulation():
    d0, u, c, t0, th = 64 * MiB, 2 * MiB, 20 * MiB, 0.2, 0.5 * MiB
    tr = m.iterate(d0, u, c, th, t0=t0, max_iterations=100)
    assert tr.converged and tr.iterations == m.iterations_needed(d0, u, c, th, t0)
    # every step is D_{k+1} = u (t0 + D_k / c)
    for dk, dn in zip(tr.committed[:-1], tr.committed[1:], strict=True):
        assert dn == pytest.approx(u * (t0 + dk / c))
    assert tr.stun_s == pytest.approx(t0 + tr.remaining / c)
    assert tr.total_s == pytest.approx(sum(tr.seconds) + tr.stun_s)


def test_convergence_condition_is_u_below_c():
    assert m.converges(1.0, 2.0, threshold=10, t0=1.0)
    assert not m.converges(2.0, 2.0, threshold=1e12)
    assert not m.converges(3.0, 2.0, threshold=1e12)
    # u < c but the fixed point u t0 / (1 - u/c) above the threshold: no convergence either
    assert not m.converges(1.0, 2.0, threshold=1.5, t0=1.0)
    tr = m.iterate(64 * MiB, 30 * MiB, 20 * MiB, MiB, max_iterations=5)
    assert not tr.converged and tr.iterations == 5 and math.isnan(tr.stun_s)
    assert list(tr.committed) == sorted(tr.committed)           # the helper grows every iteration
    assert m.iterations_needed(64 * MiB, 30 * MiB, 20 * MiB, MiB) == math.inf


def test_max_stun_lets_a_large_remainder_finish():
    tr = m.iterate(64 * MiB, 5 * MiB, 20 * MiB, MiB, max_iterations=1, max_stun_s=10.0)
    assert tr.converged and tr.iterations == 1 and tr.remaining > MiB


def test_the_stun_decision_uses_the_last_iterations_observed_rate():
    # one iteration of 64 MiB at c = 20 MiB/s plus t0 = 2 s: 5.2 s, an observed 12.3 MiB/s; the remainder
    # u·5.2 s = 5.2 MiB is predicted to take 0.42 s at that rate (the rule the measured deletion applies), although
    # the stun itself takes t0 + D/c = 2.26 s: a limit of 1 s lets it finish, 0.4 s does not
    d0, u, c, t0 = 64 * MiB, MiB, 20 * MiB, 2.0
    tr = m.iterate(d0, u, c, MiB, t0=t0, max_iterations=1, max_stun_s=1.0)
    assert tr.converged and tr.stun_s == pytest.approx(t0 + tr.remaining / c)
    assert not m.iterate(d0, u, c, MiB, t0=t0, max_iterations=1, max_stun_s=0.4).converged


def test_working_set_caps_the_helper():
    assert float(m.next_delta(100 * MiB, 50 * MiB, 10 * MiB, working_set=8 * MiB)) == 8 * MiB


@pytest.mark.parametrize("noise", [0.0, 0.03])
def test_fit_recovers_known_parameters(noise):
    truth = dict(t0=0.15, c0=24 * MiB, b=0.05 * MiB, a=40_000.0)
    data = m.synthetic_iterations(32 * MiB, [0, 50, 100, 200, 300, 400], threshold=0.5 * MiB,
                                  max_iterations=5, noise=noise, seed=3, **truth)
    f = m.fit(data["delta"], data["seconds"], data["rate"], data["grown"])
    for name in ("t0", "c0", "b", "a"):
        est = getattr(f, name)
        slack = 1e-9 * abs(truth[name]) + 1e-12     # noise 0: an interval of last bits (widened, not trusted)
        assert est.low - slack <= truth[name] <= est.high + slack, (name, est, truth[name])
        if noise == 0:
            assert est.value == pytest.approx(truth[name], rel=1e-3, abs=1e-6)
    r_star = truth["c0"] / (truth["a"] + truth["b"])
    assert f.critical_rate == pytest.approx(r_star, rel=0.2)
    lo, hi = f.critical_rate_interval()
    assert lo <= r_star <= hi
    # the fitted model predicts the seed's two outcomes: light load converges, heavy load does not
    assert f.simulate(32 * MiB, 0.2 * r_star, 0.5 * MiB).converged
    assert not f.simulate(32 * MiB, 1.5 * r_star, 0.5 * MiB).converged


def test_fit_refuses_too_few_iterations():
    with pytest.raises(ValueError, match="need at least 4"):
        m.fit_commit([1, 2], [1, 2], [0, 0])
    with pytest.raises(ValueError, match="need at least 2"):
        m.fit_dirty([1.0], [1.0], [1.0])
    assert np.isfinite(m.fixed_point(1, 2, 1))


def test_the_commit_fit_stays_in_the_physical_range_and_says_where_it_is_on_a_bound():
    # commits that got faster under load (b < 0 unbounded) and start at no cost: the fit holds b and t0 at 0
    truth = dict(t0=0.0, c0=24 * MiB, b=0.0, a=40_000.0)
    data = m.synthetic_iterations(32 * MiB, [0, 50, 100, 200, 300, 400], threshold=0.5 * MiB,
                                  max_iterations=5, noise=0.0, seed=3, **truth)
    faster = data["seconds"] * (1 - 2e-4 * data["rate"])        # beyond b = 0: the load would speed the commit
    t0, c0, b = m.fit_commit(data["delta"], faster, data["rate"])
    assert t0.value >= 0 and c0.value > 0 and b.value >= 0
    assert t0.low >= 0 and b.low >= 0
    assert "b" in m.commit_at_bound(t0, c0, b)
    t0, c0, b = m.fit_commit(data["delta"], data["seconds"] + 0.1, data["rate"])
    assert m.commit_at_bound(t0, c0, b) == ("b",) or m.commit_at_bound(t0, c0, b) == ()
    assert t0.value == pytest.approx(0.1, abs=1e-3)


# ------------------------------------------------------------------ parameters measured apart (issue 48.3)

KiB = 1 << 10
PATTERN = m.WritePattern(bs=4 * KiB, cluster=64 * KiB, region=32 * MiB, random_fraction=0.7, metadata=64 * KiB)


def simulated_growth(writes: int, seed: int) -> float:
    """Allocated bytes after `writes` writes of the pattern, as fio percentage_random issues them (a random offset
    with probability f, else the next block after the previous write), counted cluster by cluster."""
    rng = np.random.default_rng(seed)
    blocks = int(PATTERN.region // PATTERN.bs)
    per_cluster = int(PATTERN.cluster // PATTERN.bs)
    touched: set[int] = set()
    block = int(rng.integers(blocks))
    for i in range(writes):
        if i and rng.random() >= PATTERN.random_fraction:
            block = (block + 1) % blocks
        else:
            block = int(rng.integers(blocks))
        touched.add(block // per_cluster)
    return len(touched) * PATTERN.cluster + (PATTERN.metadata if writes else 0.0)


@pytest.mark.parametrize("writes", [50, 400, 3000])
def test_the_pattern_s_growth_is_what_the_pattern_allocates(writes):
    """The closed form against the pattern itself, averaged over 40 seeded draws: within 3 %."""
    mean = float(np.mean([simulated_growth(writes, s) for s in range(40)]))
    assert float(PATTERN.grown(writes)) == pytest.approx(mean, rel=0.03)


def test_the_pattern_s_growth_is_zero_without_writes_and_saturates_at_the_region():
    assert float(PATTERN.grown(0)) == 0.0
    assert float(PATTERN.grown(10 ** 7)) == pytest.approx(PATTERN.region + PATTERN.metadata)
    g = PATTERN.grown(np.arange(0, 5000, 100))
    assert np.all(np.diff(g) > 0)
    with pytest.raises(Exception, match="write pattern"):
        m.dirty_bytes(1, bs=4096, cluster=65536, region=1024, random_fraction=0.7)


def test_a_deletion_still_iterating_when_the_load_stops_does_not_converge_and_counts_the_wait():
    tr = m.iterate(64 * MiB, 5 * MiB, 20 * MiB, 1024, t0=1.0, max_iterations=10, load_s=4.0)
    assert not tr.converged and sum(tr.seconds) >= 4.0
    assert tr.total_s == pytest.approx(sum(tr.seconds) + 1.0 + tr.remaining / (20 * MiB))


def apart_params(rel: float = 0.02) -> m.ApartParameters:
    def est(v: float) -> m.Estimate:
        return m.Estimate(v, v * (1 - rel), v * (1 + rel))
    return m.ApartParameters(est(1.5), est(60 * MiB), est(95.0), PATTERN, dof=2)


def test_the_commit_gets_the_time_the_writer_leaves():
    p = apart_params()
    assert p.commit_s(60 * MiB, 0.0) == pytest.approx(1.5 + 1.0)
    assert p.commit_s(60 * MiB, 47.5) == pytest.approx(1.5 + 2.0)      # half the time left: half the rate
    assert p.commit_s(60 * MiB, 95.0) == math.inf
    se, dof = p.log_se(lambda v: p.commit_s(60 * MiB, 47.5, False, v))
    assert 0 < se < 0.05 and dof == 2
    # wider parameter intervals give a wider prediction
    assert apart_params(0.2).log_se(lambda v: p.commit_s(60 * MiB, 47.5, False, v))[0] > se


def test_apart_parameters_predict_convergence_below_the_critical_rate_only():
    p = apart_params()
    slow = p.simulate(64 * MiB, 10.0, 512 * KiB, max_iterations=10, max_stun_s=2.0)
    fast = p.simulate(64 * MiB, 90.0, 512 * KiB, max_iterations=10, max_stun_s=2.0)
    assert slow.converged and not fast.converged and slow.iterations > 2
    # each iteration's helper is what the pattern allocates over the iteration's writes
    for dk, tk in zip(slow.committed[1:], slow.seconds[:-1], strict=True):
        assert dk == pytest.approx(float(PATTERN.grown(10.0 * tk)))


def test_mean_estimate_is_a_t_interval_over_repeats():
    e = m.mean_estimate([1.0, 2.0, 3.0])
    assert e.value == pytest.approx(2.0)
    assert e.high - e.value == pytest.approx(4.302653 * 1.0 / math.sqrt(3), rel=1e-5)
    assert math.isnan(m.mean_estimate([1.0]).low)


def test_a_helper_s_layout_commits_at_its_own_throughput():
    def est(v: float) -> m.Estimate:
        return m.Estimate(v, v * 0.98, v * 1.02)
    p = m.ApartParameters(est(0.3), est(30 * MiB), est(100.0), PATTERN, dof=2, c_helper=est(2 * MiB))
    assert p.commit_s(30 * MiB, 0.0) == pytest.approx(1.3)
    assert p.commit_s(2 * MiB, 50.0, helper=True) == pytest.approx(0.3 + 2.0)
    tr = p.simulate(30 * MiB, 10.0, 256 * KiB, max_iterations=3, max_stun_s=100.0)
    assert tr.seconds[0] == pytest.approx(0.3 + 1 / 0.9)
    assert tr.seconds[1] == pytest.approx(0.3 + tr.committed[1] / (2 * MiB * 0.9))
    # the helper's throughput's interval widens a helper commit's prediction, not the delta's
    assert p.log_se(lambda v: p.commit_s(2 * MiB, 50.0, True, v))[0] > p.log_se(
        lambda v: p.commit_s(30 * MiB, 50.0, False, v))[0] > 0
