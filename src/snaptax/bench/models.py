"""Benchmarks of the model fits (the `models` group of `make bench`; flat name → number).

  seek_nll_ms              one evaluation of the per-request seek likelihood (seek.negative_log_likelihood) on a
                           quick calibration drive's size of data (16 000 requests × 16 turnaround points),
                           median over evaluations, at σ = 30 µs (where the fit ends) and at σ = 1 ms (where it
                           starts: nothing is saturated)
  seek_nll_whole_array_ms  the same likelihood as one whole-array expression (how it was computed before
                           2026-11-27): the reference its blocks and saturation skipping are measured against
  seek_fit_s               a whole per-request fit (seek.fit_seek_requests) of 16 000 synthetic QD1 requests of the
                           sas10k profile over four spans, with the turnaround as 16 points (seek_fit_requests of
                           them usable), as a quick calibration run gives a drive

Synthetic data only: the figures do not depend on what data/ holds. The machine-wide measurement lock is held
while timing, so that no measurement runs beside these (they would slow each other).
"""
from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable

import numpy as np

from ..lock import measurement_lock
from ..models import seek
from ..spindle.profiles import DriveProfile

GiB = 1 << 30
REQUESTS, POINTS = 16_000, 16
SIGMAS_S = {"": 30e-6, "_wide": 1e-3}
FIGURES_MS = (0.4, 4.0, 9.0)


def whole_array_nll(params: np.ndarray, rm: seek.RequestModel, p: DriveProfile) -> float:
    """seek.negative_log_likelihood's formula as one whole-array expression (the reference for its speed)."""
    from scipy.special import ndtr

    curve = seek._curve_or_none(params[0], params[1], params[2], p)
    if curve is None:
        return 1e12
    sigma = seek.sigma_of(params[3])
    mu = rm.phase_s + (p.overhead_ms / 1e3 + seek.seek_ms(rm.d_cyl, curve) / 1e3)[:, None]
    prob = (ndtr((rm.hi_s[:, None] - mu) / sigma) - ndtr((rm.lo_s[:, None] - mu) / sigma)).mean(axis=1)
    return float(-np.sum(np.log((1 - seek.OUTLIER) * prob + seek.OUTLIER * 0.1)))


def _sas10k() -> DriveProfile:
    from ..spindle.rigfiles import load_profile

    p = load_profile("sas10k")
    assert isinstance(p, DriveProfile)
    return p


def synthetic_request_model(p: DriveProfile, requests: int = REQUESTS, points: int = POINTS,
                            seed: int = 0) -> seek.RequestModel:
    """Censoring intervals of one revolution's width around where the figures FIGURES_MS put each request."""
    rng = np.random.default_rng(seed)
    d = rng.uniform(0, p.cylinders, requests)
    phase = rng.uniform(150e-6, 350e-6, (requests, points))
    curve = seek._curve_or_none(*FIGURES_MS, p)
    assert curve is not None
    u = phase.mean(axis=1) + p.overhead_ms / 1e3 + seek.seek_ms(d, curve) / 1e3 + rng.normal(0, 30e-6, requests)
    lo = u - rng.uniform(0, p.t_rev_s, requests)
    return seek.RequestModel(d, lo, lo + p.t_rev_s, phase, np.ones(requests), requests, 0)


def _median_ms(nll: Callable[..., float], args: tuple, evaluations: int) -> float:
    times = []
    for _ in range(evaluations):
        t0 = time.perf_counter()
        nll(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def seek_likelihood(evaluations: int = 30) -> dict[str, float]:
    p = _sas10k()
    rm = synthetic_request_model(p)
    out: dict[str, float] = {}
    for suffix, sigma in SIGMAS_S.items():
        x = np.array([*FIGURES_MS, math.log(sigma - seek.SIGMA_FLOOR_S)])
        out[f"seek_nll_ms{suffix}"] = round(_median_ms(seek.negative_log_likelihood, (x, rm, p), evaluations), 3)
        out[f"seek_nll_whole_array_ms{suffix}"] = round(_median_ms(whole_array_nll, (x, rm, p), evaluations), 3)
    return out


def seek_fit() -> dict[str, float]:
    from scipy.special import ndtri

    from ..spindle.predict import qd1_trace
    from ..spindle.profiles import DiskSpec

    p = _sas10k()
    rng = np.random.default_rng(5)
    # the client's turnaround as 16 equally likely points, as the calibration gives it (phase_quantiles_s)
    points = tuple(float(x) for x in 250e-6 + 20e-6 * ndtri((np.arange(POINTS) + 0.5) / POINTS))
    traces = []
    for span, n in ((0.003, 4000), (0.01, 4000), (0.1, 4000), (1.0, 4000)):
        off, svc = qd1_trace(DiskSpec(p), GiB, n=n, span=span, gap_s=250e-6, jitter_s=20e-6, seed=int(span * 100))
        lat = np.array(svc) + 150e-6 + rng.normal(0, 10e-6, n)
        traces.append(seek.Trace(np.array(off), lat, 250e-6, 150e-6, span, points))
    t0 = time.perf_counter()
    fit = seek.fit_seek_requests(traces, p, GiB)
    return {"seek_fit_s": round(time.perf_counter() - t0, 3), "seek_fit_requests": float(fit.points)}


def run() -> dict[str, float]:
    with measurement_lock():
        return {**seek_likelihood(), **seek_fit()}
