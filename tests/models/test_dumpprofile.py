"""The memory-dump fits' residuals are the dump-time model's, and their closed-form Jacobian (what the profiles'
inner fits solve with) is the derivative: it matches central differences for every model, inside the physical range,
on both sides of overlap's kink, and through the change of variables of a prediction's profile."""
import numpy as np
import pytest

from snaptax.models import dumpprofile as dp, memory_dump as md

MiB = 1 << 20
PAGES = (64, 256, 1024, 2048)
WAITS_MS = (0, 2, 10, 25)


def points(memory=256 * MiB + 5 * md.PAGE):     # not a whole number of blocks: n = ⌈M/B⌉ rounds up
    b, w = np.meshgrid(np.array(PAGES) * md.PAGE, np.array(WAITS_MS) / 1e3)
    b, w = b.ravel().astype(float), w.ravel()
    t = md.dump_time_s("after", memory, b, w, s0_s=6e-3, bw_bytes_s=140 * MiB)
    return np.full(len(b), float(memory)), b, w, t


def central(fun, x, h=1e-6):
    cols = []
    for i in range(len(x)):
        step = h * max(1.0, abs(x[i]))
        up, dn = x.copy(), x.copy()
        up[i] += step
        dn[i] -= step
        cols.append((fun(up) - fun(dn)) / (2 * step))
    return np.column_stack(cols)


def one_sided(fun, x, sign, h=1e-7):
    cols = []
    for i in range(len(x)):
        step = sign * h * max(1.0, abs(x[i]))
        moved = x.copy()
        moved[i] += step
        cols.append((fun(moved) - fun(x)) / step)
    return np.column_stack(cols)


def assert_a_derivative(jac, fun, x):
    """Each entry of jac(x) is fun's derivative from one side or the other: overlap's max(s, w) has a kink where
    s = w, and a fit (or a profile's start) lands on it exactly more often than chance (a least-squares minimum of a
    piecewise-smooth model often sits at a kink), where the two sides differ and central differences average them."""
    j = jac(x)
    close = [np.isclose(j, one_sided(fun, x, sign), rtol=1e-4, atol=1e-5) for sign in (+1, -1)]
    assert np.all(close[0] | close[1]), (j, one_sided(fun, x, +1), one_sided(fun, x, -1))


THETAS = {"after": [[6.0, 7.1], [0.01, 0.5]], "overlap": [[6.0, 7.1], [0.5, 20.0], [30.0, 0.2]],
          "oversleep": [[6.0, 7.1, 0.8], [1.0, 3.0, -1.5]], "zero_skip": [[6.0, 7.1, 0.2], [0.5, 1.0, 0.9]]}


@pytest.mark.parametrize("model,theta", [(m, t) for m, ts in THETAS.items() for t in ts])
def test_the_residuals_are_the_models_and_the_jacobian_their_derivative(model, theta):
    m, b, w, t = points()
    resid = dp.Residuals(model, m, b, w, t)
    theta = np.asarray(theta, dtype=float)
    extra = ({"delta_s": theta[2] / 1e3} if model == "oversleep" else {"z": theta[2]} if model == "zero_skip"
             else {})
    expected = np.log(t) - np.log(md.dump_time_s(model, m, b, w, s0_s=theta[0] / 1e3,
                                                 bw_bytes_s=1 / (theta[1] / 1e3 / MiB), **extra))
    np.testing.assert_allclose(resid(theta), expected, rtol=1e-12, atol=1e-12)
    jac = resid.jacobian(theta)
    assert jac.shape == (len(t), len(theta))
    np.testing.assert_allclose(jac, central(resid, theta), rtol=1e-5, atol=1e-7)


def test_overlap_follows_the_service_time_only_where_it_exceeds_the_wait():
    m, b, w, t = points()
    resid = dp.Residuals("overlap", m, b, w, t)
    theta = np.asarray([0.5, 2.0])             # s(B) from 0.6 ms (64 pages) to 16.5 ms (2048 pages)
    jac = resid.jacobian(theta)
    s_ms = theta[0] + b / MiB * theta[1]
    assert np.all(jac[w * 1e3 > s_ms] == 0) and np.all(jac[w * 1e3 < s_ms] < 0)


@pytest.mark.parametrize("model,c,w_ms", [("after", 40.0, 25.0), ("oversleep", 40.0, 25.0),
                                          ("zero_skip", 30.0, 25.0), ("overlap", 25.0, 25.0),
                                          ("overlap", 40.0, 25.0)])
def test_a_predictions_profile_is_solved_with_the_derivative_of_its_change_of_variables(model, c, w_ms, monkeypatch):
    """rss_predicting's inner fit runs over (f, own parameter) boxes: the Jacobian it hands the solver, J(θ(u))·θ'(u),
    is a one-sided derivative of the residuals through θ(u) at the points it is asked at."""
    m, b, w, t = points()
    f = md.fit(model, m, b, w, t * np.exp(0.01 * np.sin(np.arange(len(t)))))
    resid = dp.Residuals(model, *(np.asarray(x) for x in f.data))
    lower, upper = (np.asarray(x) for x in f.bounds)
    seen = []

    def recording(fun, jac, x0, lo, hi, what):
        for x in (x0, 0.5 * (lo + hi), lo + 0.3 * (hi - lo)):
            seen.append(x)
            assert_a_derivative(jac, fun, x)
        return 0.0

    monkeypatch.setattr(dp, "inner_rss", recording)
    dp.rss_predicting(resid, np.asarray(f.theta), c, 1024 * md.PAGE / MiB, w_ms, lower, upper)
    assert seen
