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
