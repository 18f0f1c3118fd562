"""The seek-span model and its fits recover known parameters from synthetic data (pure; no daemons)."""
import math
from dataclasses import replace

import numpy as np
import pytest

from snaptax.models import seek
from snaptax.spindle.predict import closed_loop, qd1_trace
from snaptax.spindle.profiles import DiskSpec
from snaptax.spindle.rigfiles import disk, load_profile

GiB = 1 << 30


@pytest.fixture(scope="module")
def p10k():
    return load_profile("sas10k")


def test_model_mean_service_agrees_with_simulator(p10k):
    # the analytic S(span) and the event simulator are independent implementations of the same model
    for span in (0.01, 1.0):
        sim = closed_loop(DiskSpec(p10k), GiB, iodepth=1, ios=6000, span=span, seed=7).mean_latency_s
        assert seek.mean_service_s(span, p10k.seek_read, p10k, GiB) == pytest.approx(sim, rel=0.03)


def test_x_of_is_the_geometry_of_the_drive(p10k):
    from snaptax.spindle.model import Geometry

    g = Geometry(p10k, GiB)
    lbas = np.array([0, 12345 * 4096, GiB // 2, GiB - 4096])
    assert seek.x_of(lbas, p10k, GiB) == pytest.approx([g.x_of(int(b)) for b in lbas], abs=1e-9)


def test_datasheet_qd1_iops(p10k):
    # 1 / (0.2 + 3.8 + 3.0 + 0.036) ms
    assert seek.datasheet_qd1_iops(p10k) == pytest.approx(1 / 7.036e-3, rel=0.002)


def test_span_fit_recovers_configured_seek_figures_without_noise(p10k):
    y, se = seek.synthetic_span_data(p10k, GiB, harness_s=100e-6)
    fit = seek.fit_seek_span(seek.SPANS, y, se, p10k, GiB, harness_s=100e-6)
    assert max(fit.rel_errors(p10k.seek_read).values()) < 0.01


def test_span_fit_with_measurement_noise_has_honest_intervals(p10k):
    # noise of a 10 s QD1 run: rotational latency sd T_rev/√12 over ~1400 commands
    noise = p10k.t_rev_s / math.sqrt(12) / math.sqrt(1400)
    truth = p10k.seek_read
    trials, covered, errors = 12, dict.fromkeys(seek.FIGURES, 0), []
    for seed in range(trials):
        y, se = seek.synthetic_span_data(p10k, GiB, noise_s=noise, seed=seed)
        fit = seek.fit_seek_span(seek.SPANS, y, se, p10k, GiB)
        errors.append(fit.rel_errors(truth)["average_ms"])
        for name, ci in zip(seek.FIGURES, fit.ci95_ms, strict=True):
            covered[name] += abs(getattr(fit, name) - getattr(truth, name)) <= ci
    # 95 % intervals hold each figure in about 11.4 of 12 noisy data sets; 8 or fewer has a chance of 0.2 %
    assert all(c >= 9 for c in covered.values()), covered
    assert max(errors) < 0.05
    # a wrong model is detectable: shifting the data by 1 ms cannot be fitted with the right figures
    bad = seek.fit_seek_span(seek.SPANS, y + 1e-3, se, p10k, GiB)
    assert bad.rel_errors(truth)["average_ms"] > 0.1


def _traces(name, harness_s=150e-6, gap_s=250e-6):
    rng = np.random.default_rng(5)
    out = []
    for span, n in ((0.003, 1500), (0.01, 1500), (0.1, 1000), (1.0, 1500)):
        off, svc = qd1_trace(disk(name), GiB, n=n, span=span, gap_s=gap_s, jitter_s=20e-6, seed=int(span * 100))
        lat = np.array(svc) + harness_s + rng.normal(0, 10e-6, n)
        out.append(seek.Trace(np.array(off), lat, gap_s, harness_s, span))
    return out


@pytest.mark.parametrize("name", ["sas10k", "nlsas7k2"])
def test_request_fit_recovers_configured_figures(name):
    p = load_profile(name)
    fit = seek.fit_seek_requests(_traces(name), p, GiB)
    errs = fit.rel_errors(p.seek_read)
    assert max(errs.values()) < 0.05, errs
    for k, ci in zip(seek.FIGURES, fit.ci95_ms, strict=True):
        assert 0 < ci and abs(getattr(fit, k) - getattr(p.seek_read, k)) < 3 * ci + 1e-9, k
    # the client's jitter (20 µs turnaround + 10 µs harness) comes back as σ
    assert 10e-6 < fit.residual_rms_s < 60e-6
    assert 4000 < fit.points < 5500   # 5500 requests less first ones and read-ahead hits


def test_request_fit_detects_a_wrong_turnaround(p10k):
    # telling the fit the turnaround is 100 µs longer than it was moves the short-seek figure by about that much
    off, svc = qd1_trace(disk("sas10k"), GiB, n=3000, span=0.01, gap_s=200e-6, jitter_s=10e-6)
    off2, svc2 = qd1_trace(disk("sas10k"), GiB, n=2000, span=1.0, gap_s=200e-6, jitter_s=10e-6, seed=2)
    good = [seek.Trace(np.array(off), np.array(svc), 200e-6), seek.Trace(np.array(off2), np.array(svc2), 200e-6)]
    bad = [seek.Trace(t.offsets, t.clat_s, 300e-6) for t in good]
    t_good = seek.fit_seek_requests(good, p10k, GiB).track_to_track_ms
    t_bad = seek.fit_seek_requests(bad, p10k, GiB).track_to_track_ms
    assert abs(t_good - 0.30) < 0.015 and t_bad < t_good - 0.05


def test_a_skewed_turnaround_is_fitted_from_its_distribution(p10k):
    # a turnaround of 150 µs + an exponential tail of mean 80 µs (median ≈ 205, mean 230 µs), given to the fit as
    # 16 equally likely points: the figures come back, and the turnaround's spread is no longer read as jitter
    rng = np.random.default_rng(3)
    gaps = 150e-6 + rng.exponential(80e-6, 200_000)
    points = tuple(np.quantile(gaps, (np.arange(16) + 0.5) / 16))
    median, traces = float(np.median(gaps)), []
    for span, n in ((0.003, 2500), (0.03, 2000), (1.0, 1500)):
        off, svc = qd1_trace(disk("sas10k"), GiB, n=n, span=span, gap_s=150e-6, tail_s=80e-6, seed=int(span * 1000))
        traces.append(seek.Trace(np.array(off), np.array(svc), median, 0.0, span))
    at_median = seek.fit_seek_requests(traces, p10k, GiB)
    with_points = seek.fit_seek_requests([replace(t, phase_quantiles_s=points) for t in traces], p10k, GiB)
    assert max(with_points.rel_errors(p10k.seek_read).values()) < 0.05
    for k, ci in zip(seek.FIGURES, with_points.ci95_ms, strict=True):
        assert abs(getattr(with_points, k) - getattr(p10k.seek_read, k)) < 3 * ci, k
    assert with_points.residual_rms_s < at_median.residual_rms_s / 2


@pytest.mark.parametrize("n,q", [(3000, 1), (3000, 16), (40, seek.NLL_BLOCK_VALUES + 1000)])
def test_the_blocked_likelihood_is_the_whole_array_expression_bit_for_bit(p10k, n, q):
    """negative_log_likelihood skips Φ where it is saturated and works in blocks; it must give exactly what the
    formula gives on whole arrays, at σ where nearly nothing, part and nearly everything is saturated, with
    intervals wholly below, around and above μ, and with one, many and more turnaround points than a block holds."""
    from snaptax.bench.models import whole_array_nll

    rng = np.random.default_rng(11)
    lo = rng.uniform(0, 20e-3, n)
    rm = seek.RequestModel(d_cyl=rng.uniform(0, p10k.cylinders, n), lo_s=lo, hi_s=lo + rng.uniform(0, 6e-3, n),
                           phase_s=rng.uniform(100e-6, 400e-6, (n, q)), span=np.ones(n), used=n, excluded=0)

    def whole(params):
        return whole_array_nll(params, rm, p10k)

    saturated = []
    for sigma in (1e-6, 3e-5, 2e-4, 1e-3, 1e-2):
        params = np.array([0.4, 4.0, 9.0, math.log(sigma)])
        assert seek.negative_log_likelihood(params, rm, p10k) == whole(params), sigma
        mu = rm.phase_s + (p10k.overhead_ms / 1e3 + seek.seek_ms(rm.d_cyl, seek._curve_or_none(0.4, 4.0, 9.0, p10k))
                           / 1e3)[:, None]
        z_hi = (rm.hi_s[:, None] - mu) / seek.sigma_of(params[3])
        saturated.append(float((z_hi >= seek.PHI_SATURATED).mean()))
    assert min(saturated) < 0.1 and max(saturated) > 0.5   # both regimes were exercised
    # a NaN stays a NaN (it is not taken for a saturated term)
    nan = np.array([0.4, 4.0, 9.0, math.nan])
    assert math.isnan(seek.negative_log_likelihood(nan, rm, p10k)) and math.isnan(whole(nan))
    assert seek.negative_log_likelihood(np.array([5.0, 4.0, 9.0, 0.0]), rm, p10k) == 1e12


def test_traces_with_different_numbers_of_turnaround_points_are_refused(p10k):
    off, svc = qd1_trace(disk("sas10k"), GiB, n=50, span=1.0, gap_s=200e-6)
    a = seek.Trace(np.array(off), np.array(svc), 200e-6, phase_quantiles_s=(1e-4, 2e-4))
    with pytest.raises(seek.FitError, match="different numbers of points"):
        seek.request_model([a, replace(a, phase_quantiles_s=())], p10k, GiB)


def test_request_model_leaves_out_readahead_hits_and_first_requests(p10k):
    bs = 4096
    offsets = np.array([0, 10 * GiB // 16, 10 * GiB // 16 + bs, GiB // 2, 3 * GiB // 4])   # #2 is a buffer hit
    lat = np.full(len(offsets), 5e-3)
    rm = seek.request_model([seek.Trace(offsets, lat, 200e-6)], p10k, GiB)
    # first request, the buffer hit and the request after it are left out
    assert rm.excluded >= 3 and rm.used <= 2
    assert rm.used + rm.excluded == len(offsets)


def test_a_failed_fit_raises(p10k):
    off, svc = qd1_trace(disk("sas10k"), GiB, n=20, span=1.0, gap_s=200e-6)
    with pytest.raises(seek.FitError, match="usable requests"):
        seek.fit_seek_requests([seek.Trace(np.array(off), np.array(svc), 200e-6)], p10k, GiB)
    with pytest.raises(seek.FitError):
        seek.fit_seek_requests([], p10k, GiB)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sigma_at_its_floor_still_gives_honest_intervals(seed):
    # Almost no client jitter: σ ends at SIGMA_FLOOR_S, where −log L is flat in the σ parameter. The interval must
    # then come from the three figures' own information; dividing by σ's zero curvature made the matrix singular (a
    # smoke CI run failed on it) or gave nonsense half-widths (1e-10 ms for the average seek with seed 1).
    p = load_profile("sas15k")
    traces = []
    for span in (0.01, 0.1, 1.0):
        off, svc = qd1_trace(disk("sas15k"), GiB, n=500, span=span, gap_s=250e-6, jitter_s=5e-6,
                             seed=seed * 10 + int(span * 100))
        traces.append(seek.Trace(np.array(off), np.array(svc), 250e-6, 0.0, span))
    fit = seek.fit_seek_requests(traces, p, GiB)
    assert fit.residual_rms_s < seek.SIGMA_FLOOR_S * (1 + seek.SIGMA_AT_FLOOR)
    for k, ci in zip(seek.FIGURES, fit.ci95_ms, strict=True):
        assert 0.005 < ci < 0.2, (k, ci)
        assert abs(getattr(fit, k) - getattr(p.seek_read, k)) < 3 * ci, k
