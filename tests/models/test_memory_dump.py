"""The dump-time models recover known parameters from synthetic grids, tell the models apart by AIC, carry the
fit's uncertainty into predictions (the profile likelihood's where a bound is active), and refuse impossible grid
points with one ConfigError naming the field."""
import math

import numpy as np
import pytest

from snaptax.errors import ConfigError
from snaptax.models import memory_dump as md
from snaptax.stats import ProfileFitError

MiB, GiB = 1 << 20, 1 << 30
PAGES = (64, 256, 1024, 2048)
WAITS_MS = (0, 2, 10, 25)
TRUE = {"s0_s": 6e-3, "bw_bytes_s": 140 * MiB}


def grid(model: str, memory=256 * MiB, repeats=2, noise=0.01, seed=3, **extra):
    """(memory, block, wait, dump) arrays of a synthetic grid under `model`, with multiplicative noise."""
    rng = np.random.default_rng(seed)
    b, w = np.meshgrid(np.array(PAGES) * md.PAGE, np.array(WAITS_MS) / 1e3)
    b, w = np.tile(b.ravel(), repeats), np.tile(w.ravel(), repeats)
    t = md.dump_time_s(model, memory, b, w, **TRUE, **extra) * np.exp(rng.normal(0, noise, len(b)))
    return np.full(len(b), float(memory)), b.astype(float), w, t


def inside(ci, x):
    return ci[0] <= x <= ci[1]


@pytest.mark.parametrize("model,extra,name,value", [
    ("after", {}, None, None),
    ("overlap", {}, None, None),
    ("oversleep", {"delta_s": 0.8e-3}, "delta_ms", 0.8),
    ("zero_skip", {"z": 0.2}, "z", 0.2),
])
def test_fit_recovers_known_parameters_within_its_intervals(model, extra, name, value):
    f = md.fit(model, *grid(model, **extra))
    assert f.points == 32 and f.dof == 32 - len(f.params)
    assert f.params["s0_ms"] == pytest.approx(6.0, rel=0.1) and inside(f.ci95["s0_ms"], 6.0)
    assert f.params["bw_mib_s"] == pytest.approx(140, rel=0.05) and inside(f.ci95["bw_mib_s"], 140)
    if name:
        assert f.params[name] == pytest.approx(value, abs=0.1 * abs(value) + 0.05)
        assert inside(f.ci95[name], value)
    assert f.rms_pct < 2


def test_exact_data_are_fitted_exactly():
    m, b, w, t = grid("after", noise=0.0)
    f = md.fit("after", m, b, w, t)
    assert f.params["s0_ms"] == pytest.approx(6.0, rel=1e-6)
    assert f.params["bw_mib_s"] == pytest.approx(140, rel=1e-6)
    assert f.rms_pct < 1e-6
    assert np.allclose(f.predict(m, b, w), t)


def test_aic_prefers_the_model_that_made_the_data():
    for truth, extra in (("after", {}), ("overlap", {}), ("oversleep", {"delta_s": 2e-3})):
        fits = md.fit_all(*grid(truth, **extra))
        d = md.delta_aic(fits)
        assert min(d, key=d.get) in ({truth} if truth != "after" else {"after", "oversleep", "zero_skip"})
        if truth == "overlap":
            assert d["after"] > 10
        if truth == "oversleep":
            assert d["after"] > 10 and d["overlap"] > 10


def test_on_an_after_grid_the_extra_parameters_are_zero():
    fits = md.fit_all(*grid("after"))
    assert inside(fits["oversleep"].ci95["delta_ms"], 0.0)
    assert inside(fits["zero_skip"].ci95["z"], 0.0)


def test_prediction_interval_covers_the_truth_and_scales_with_memory():
    f = md.fit("after", *grid("after"))
    est, lo, hi = f.predict_interval(4 * GiB, 64 * md.PAGE, 0.025)
    truth = float(md.dump_time_s("after", 4 * GiB, 64 * md.PAGE, 0.025, **TRUE))
    assert lo < truth < hi and lo < est < hi
    assert truth == pytest.approx(16384 * (6e-3 + 256 * 1024 / (140 * MiB) + 0.025))
    assert est == pytest.approx(16 * float(f.predict(256 * MiB, 64 * md.PAGE, 0.025)))


def test_formulas_and_the_seed_arithmetic():
    assert float(md.iterations(4 * GiB, 64 * md.PAGE)) == 16384
    assert float(md.seed_estimate_s(4 * GiB, 64 * md.PAGE, 0.025)) == pytest.approx(409.6)
    kw = dict(s0_s=0.002, bw_bytes_s=100 * MiB)
    s = 0.002 + 8 * MiB / (100 * MiB)
    assert float(md.dump_time_s("overlap", 8 * MiB, 8 * MiB, 0.025, **kw)) == pytest.approx(max(s, 0.025))
    assert float(md.dump_time_s("oversleep", 8 * MiB, 8 * MiB, 0.0, delta_s=1.0, **kw)) == pytest.approx(s)
    assert float(md.dump_time_s("zero_skip", 8 * MiB, 8 * MiB, 0.01, z=0.5, **kw)) == pytest.approx(0.5 * (s + 0.01))
    # implied parameters reproduce the timing they came from
    d = md.implied_oversleep_ms(333.95, 4 * GiB, 64 * md.PAGE, 0.025, 2.0)
    assert float(md.dump_time_s("oversleep", 4 * GiB, 64 * md.PAGE, 0.025, s0_s=0.002, bw_bytes_s=math.inf,
                                delta_s=d / 1e3)) == pytest.approx(333.95)
    z = md.implied_zero_fraction(333.95, 4 * GiB, 64 * md.PAGE, 0.025, 2.0)
    assert float(md.dump_time_s("zero_skip", 4 * GiB, 64 * md.PAGE, 0.025, s0_s=0.002, bw_bytes_s=math.inf,
                                z=z)) == pytest.approx(333.95)
    # the seed's two timings under `after`: the default iteration (20.4 ms) is shorter than its own 25 ms wait
    s0, tau = md.two_point_after(4 * GiB, (64 * md.PAGE, 0.025, 333.95), (2048 * md.PAGE, 0.002, 83.9))
    assert s0 < 0 < tau
    assert float(md.duty_cycle(64 * md.PAGE, 0.0, **kw)) == 1.0
    w = md.wait_for_duty_s(64 * md.PAGE, 0.25, **kw)
    assert float(md.duty_cycle(64 * md.PAGE, w, **kw)) == pytest.approx(0.25)


@pytest.mark.parametrize("pages,wait,field", [(0, 25, "ioBlockPages"), (-64, 25, "ioBlockPages"),
                                              (2.5, 25, "ioBlockPages"), (64, -1, "ioWait"),
                                              (64, math.nan, "ioWait")])
def test_an_impossible_grid_point_is_refused_naming_the_field(pages, wait, field):
    with pytest.raises(ConfigError, match=f"field '{field}'") as exc:
        md.WalkerPoint(pages, wait)
    assert "\n" not in str(exc.value)


def test_walker_point_and_unfittable_grids():
    p = md.WalkerPoint(64, 25)
    assert p.block_bytes == 256 * 1024 and p.wait_s == 0.025 and p.label == "p64-w25"
    assert md.WalkerPoint(64, 2.5).label == "p64-w2p5"
    m, b, w, t = grid("after")
    one = b == b[0]
    with pytest.raises(ValueError, match="two block sizes"):
        md.fit("after", m[one], b[one], w[one], t[one])
    waited = w > 0
    with pytest.raises(ValueError, match="with and without a wait"):
        md.fit("oversleep", m[waited], b[waited], w[waited], t[waited])
    with pytest.raises(ValueError, match="model"):
        md.fit("nonsense", m, b, w, t)


def test_a_per_write_cost_of_nothing_is_fitted_within_its_range_and_the_intervals_cover_the_truth():
    """s0 = 0 on the bound: in repeated samples the estimate never goes below it, half the fits sit on it, and the
    profile intervals of both parameters cover the truth about 95 % of the time."""
    covered, on_bound = 0, 0
    for seed in range(20):
        m, b, w, t = grid("after", noise=0.02, seed=seed)
        noise = t / md.dump_time_s("after", m, b, w, **TRUE)
        t = md.dump_time_s("after", m, b, w, s0_s=0.0, bw_bytes_s=140 * MiB) * noise
        f = md.fit("after", m, b, w, t)
        assert f.params["s0_ms"] >= 0 and f.ci95["s0_ms"][0] >= 0       # never below the physical range
        on_bound += "s0_ms" in f.at_bound
        covered += inside(f.ci95["s0_ms"], 0.0) and inside(f.ci95["bw_mib_s"], 140)
    assert 3 <= on_bound <= 17 and covered >= 16


def test_a_timer_that_skips_its_shortest_wait_is_fitted_on_the_bound_and_the_interval_ends_there():
    m, b, w, t = grid("oversleep", delta_s=-3e-3, noise=0.01)     # δ below −2 ms: the 2-ms waits would be negative
    f = md.fit("oversleep", m, b, w, t)
    assert f.params["delta_ms"] == pytest.approx(-2.0, abs=1e-6) and "delta_ms" in f.at_bound
    assert f.ci95["delta_ms"][0] == pytest.approx(-2.0) and f.ci95["delta_ms"][1] > -2.0


def test_skipped_blocks_are_a_share_between_none_and_all():
    f = md.fit("zero_skip", *grid("after", noise=0.02, seed=11))
    assert 0.0 <= f.params["z"] < 1.0 and f.ci95["z"][0] >= 0.0
    with_skips = md.fit("zero_skip", *grid("zero_skip", z=0.3, noise=0.01))
    assert with_skips.at_bound == () and inside(with_skips.ci95["z"], 0.3)


def _on_bound_grid(seed, noise=0.02):
    """A grid from a device without a per-write cost (s0 = 0, on its bound) and its noise."""
    m, b, w, t = grid("after", noise=noise, seed=seed)
    noise_factor = t / md.dump_time_s("after", m, b, w, **TRUE)
    return m, b, w, md.dump_time_s("after", m, b, w, s0_s=0.0, bw_bytes_s=140 * MiB) * noise_factor


def test_the_prediction_interval_is_the_delta_methods_off_the_bounds_where_the_profile_agrees():
    f = md.fit("after", *grid("after"))
    assert not f.profiled
    point = (4 * GiB, 64 * md.PAGE, 0.0)
    auto, delta, prof = (f.predict_interval(*point, how=h) for h in ("auto", "delta", "profile"))
    assert auto == delta and prof[0] == delta[0]
    # the model is nearly linear on log T: the profile's ends lie close to the delta method's
    half = (delta[2] - delta[1]) / 2
    assert prof[1] == pytest.approx(delta[1], abs=0.1 * half) and prof[2] == pytest.approx(delta[2], abs=0.1 * half)
    with pytest.raises(ValueError, match="how"):
        f.predict_interval(*point, how="bootstrap")


def test_with_a_bound_active_the_prediction_is_profiled_covers_the_truth_and_stays_within_the_bounded_model():
    """s0 = 0 on its bound: over repeated samples the prediction's profile interval covers the true dump time about
    95 % of the time, at a point where the wait dominates (1 page, 25 ms: the delta method's lower end reaches below
    the least time the bounded model can predict there, n·w) and at one the service time dominates."""
    points = {"short write, long wait": (4 * GiB, 1 * md.PAGE, 0.025), "long write": (4 * GiB, 2048 * md.PAGE, 0.0)}
    covered = dict.fromkeys(points, 0)
    profiled, delta_below = 0, 0
    for seed in range(30):
        f = md.fit("after", *_on_bound_grid(seed))
        profiled += f.profiled
        for name, (mem, block, wait) in points.items():
            est, lo, hi = f.predict_interval(mem, block, wait)
            truth = float(md.dump_time_s("after", mem, block, wait, s0_s=0.0, bw_bytes_s=140 * MiB))
            least = f.least_s(mem, block, wait)
            assert least == pytest.approx(float(md.iterations(mem, block)) * (wait + 1e-12 * block / MiB))
            assert least <= lo <= est <= hi < math.inf      # never below what the bounded model can predict
            covered[name] += lo <= truth <= hi
            if f.profiled and wait > 0:
                delta_below += f.predict_interval(mem, block, wait, how="delta")[1] < least
    assert profiled >= 10 and delta_below >= 1          # the case the profile is for occurs, and the delta fails it
    assert all(c >= 25 for c in covered.values()), covered


def test_a_prediction_that_is_the_wait_has_no_spread_below_it():
    """overlap where the wait outlasts the write: every fit the data allow predicts n·w, the least the model can
    predict there; the profile's lower end is that, not a clipped delta interval."""
    f = md.fit("overlap", *grid("overlap"))
    est, lo, hi = f.predict_interval(256 * MiB, 64 * md.PAGE, 0.025, how="profile")
    assert lo == f.least_s(256 * MiB, 64 * md.PAGE, 0.025) == pytest.approx(1024 * 0.025)
    assert est == pytest.approx(lo, rel=1e-12) and hi == pytest.approx(lo, rel=1e-6)


def test_a_bounded_oversleep_predicts_within_its_range():
    m, b, w, t = grid("oversleep", delta_s=-3e-3, noise=0.01)      # δ on its bound −2 ms
    f = md.fit("oversleep", m, b, w, t)
    assert f.profiled
    for point in ((256 * MiB, 64 * md.PAGE, 0.002), (256 * MiB, 2048 * md.PAGE, 0.0), (4 * GiB, 64 * md.PAGE, 0.025)):
        est, lo, hi = f.predict_interval(*point)
        assert f.least_s(*point) <= lo < est < hi < math.inf


def test_the_bandwidth_interval_has_no_upper_end_where_its_inverse_reaches_its_floor():
    floor = 1e-9
    assert md.bandwidth_interval(floor, 2.0, floor) == (500.0, math.inf)        # not 1e3/floor = 10^12 MiB/s
    assert md.bandwidth_interval(1.0, math.inf, floor) == (0.0, 1000.0)         # bw's physical limit 0
    assert md.bandwidth_interval(4.0, 8.0, floor) == (125.0, 250.0)
    assert all(math.isnan(x) for x in md.bandwidth_interval(math.nan, math.nan, floor))
    # a device too fast for the grid to see its bandwidth: 1/bw's interval reaches its floor
    m, b, w, _ = grid("after")
    t = md.dump_time_s("after", m, b, w, s0_s=6e-3, bw_bytes_s=1e6 * MiB) * np.exp(
        np.random.default_rng(5).normal(0, 0.02, len(b)))
    f = md.fit("after", m, b, w, t)
    assert f.profiled and f.ci95["bw_mib_s"][1] == math.inf and 0 < f.ci95["bw_mib_s"][0] < math.inf
    assert f.params["bw_mib_s"] == math.inf or f.params["bw_mib_s"] < 1e9       # never 1e3/floor


def test_a_bandwidth_estimate_on_its_inverse_s_floor_is_unbounded_not_ten_to_the_twelve():
    floor = 1e-9
    assert md.bandwidth_estimate(floor, floor) == math.inf
    assert md.bandwidth_estimate(4.0, floor) == 250.0


def _failing_inner_fits(monkeypatch, below: int) -> None:
    """scipy's least_squares reports no convergence for every fit of fewer than `below` variables (the inner fits
    of a profile; the model's own fit has all of them)."""
    real = md.optimize.least_squares

    def least_squares(fun, x0, **kw):
        res = real(fun, x0, **kw)
        if len(np.atleast_1d(x0)) < below:
            res.success, res.message = False, "made to fail"
        return res
    monkeypatch.setattr(md.optimize, "least_squares", least_squares)


def test_a_profile_whose_inner_fit_fails_raises_instead_of_supplying_a_point(monkeypatch):
    data = grid("oversleep", delta_s=-3e-3, noise=0.01)       # δ on its bound: every interval is a profile
    f = md.fit("oversleep", *data)
    _failing_inner_fits(monkeypatch, below=3)
    with pytest.raises(ProfileFitError, match="oversleep: profile of parameter 0 .*made to fail"):
        md.fit("oversleep", *data)
    with pytest.raises(ProfileFitError, match="profile of the prediction.*made to fail"):
        f.predict_interval(256 * MiB, 64 * md.PAGE, 0.002)
    assert issubclass(ProfileFitError, ValueError)     # the held-out test's untested point, as any failed fit


def test_a_fit_that_only_predicts_predicts_the_same_and_leaves_only_profiled_intervals_out():
    """fit(parameter_intervals=False), what the held-out test fits: the same estimates and the same prediction with
    its interval; the parameters' intervals are nan where the fit is profiled (s0 on its bound here) and the t
    intervals as before where it is not."""
    on_bound = next(d for d in map(_on_bound_grid, range(30)) if md.fit("after", *d).profiled)
    for data in (on_bound, grid("after")):
        full, lean = md.fit("after", *data), md.fit("after", *data, parameter_intervals=False)
        assert lean.params == full.params and lean.profiled == full.profiled
        point = (4 * GiB, 1 * md.PAGE, 0.025)
        assert lean.predict_interval(*point) == full.predict_interval(*point)
        if full.profiled:
            assert all(math.isnan(lo) and math.isnan(hi) for lo, hi in lean.ci95.values())
            assert all(math.isfinite(lo) for lo, _ in full.ci95.values())
        else:
            assert lean.ci95 == full.ci95
    assert not md.fit("after", *grid("after")).profiled
