"""The memory-dump fits' residuals with their Jacobian in closed form, and the profile likelihoods built on them
(snaptax.models.memory_dump: its models, internal units θ = (s0 ms, 1/bw ms per MiB[, δ ms | z])).

A fit whose intervals are the profile likelihood's, and a prediction's profile, each solve hundreds of small bounded
least-squares problems (the least RSS with one quantity held at a value); a memory-dump analysis's held-out test
solves thousands. Why a closed-form Jacobian: profiled on 2026-12-02 (a synthetic quick run, 27.7 s), scipy's finite
differences of the residuals were 37 % of the analysis (9.4 s) and recomputing the iterations ⌈M/B⌉ on every
evaluation another 10 %. The residuals are the same floating-point operations as memory_dump.dump_time_s, in the same
order, so they are what they were; only the inner fits' Jacobian changed. The profiles' ends then move within what
the inner fits (tolerances 1e-12) and the walk's root finding (1e-10 of the estimate) resolve: every value the
committed runs print was the same before and after (tests/paper/test_printedvalues.py, 2026-12-02). Pure.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import optimize, stats

from ..stats import ProfileFitError, profile_end

MiB = 1 << 20


class Residuals:
    """θ → ln T_measured − ln T_model(θ) over the fitted points (memory m, block b and wait w in bytes and s, dump
    times t in s), the residuals every memory-dump fit minimises; `jacobian(θ)` their derivatives (one column per
    parameter). T_model is floored at 1e-12 s, where its derivatives are 0."""

    def __init__(self, model: str, m: np.ndarray, b: np.ndarray, w: np.ndarray, t: np.ndarray) -> None:
        self.model = model
        self.b, self.w = b, w
        self.n = np.ceil(m / b)              # memory_dump.iterations, once instead of on every evaluation
        self.log_t = np.log(t)
        self.waited = w > 0

    def _service(self, theta: np.ndarray) -> tuple[np.ndarray, bool]:
        """s(B) = s0 + B/bw in s, as memory_dump.service_s computes it, and whether 1/bw > 0 (else bw = inf)."""
        s0, tau = theta[0] / 1e3, theta[1] / 1e3 / MiB          # s, s per byte
        bw = 1.0 / tau if tau > 0 else math.inf
        return s0 + self.b / bw, tau > 0

    def dump_s(self, theta: np.ndarray) -> np.ndarray:
        """T(θ) in s: memory_dump.dump_time_s's operations."""
        return self._dump_at(self._service(theta)[0], theta)

    def _dump_at(self, s: np.ndarray, theta: np.ndarray) -> np.ndarray:
        n, w = self.n, self.w
        if self.model == "after":
            return n * (s + w)
        if self.model == "overlap":
            return n * np.maximum(s, w)
        if self.model == "oversleep":
            return n * (s + w + theta[2] / 1e3 * self.waited)
        return (1.0 - theta[2]) * n * (s + w)

    def __call__(self, theta: np.ndarray) -> np.ndarray:
        return self.log_t - np.log(np.maximum(self.dump_s(theta), 1e-12))

    def jacobian(self, theta: np.ndarray) -> np.ndarray:
        """∂r/∂θ = −(∂T/∂θ)/T: s grows by 1e-3 s per ms of s0 and by B/MiB·1e-3 s per ms/MiB of 1/bw (not at all where
        1/bw ≤ 0, which memory_dump reads as bw = inf); overlap's T follows s only where s ≥ w."""
        s, positive = self._service(theta)
        n, w = self.n, self.w
        ds = np.column_stack([np.full_like(s, 1e-3), self.b / MiB * 1e-3 if positive else np.zeros_like(s)])
        if self.model == "overlap":
            dT = (n * (s >= w))[:, None] * ds
        elif self.model == "zero_skip":
            dT = np.column_stack([(1.0 - theta[2]) * n[:, None] * ds, -n * (s + w)])
        else:
            dT = n[:, None] * ds
            if self.model == "oversleep":
                dT = np.column_stack([dT, n * self.waited * 1e-3])
        t_model = self._dump_at(s, theta)
        floored = t_model <= 1e-12
        return np.where(floored[:, None], 0.0, -dT / np.where(floored, 1.0, t_model)[:, None])


def cut(rss: float, dof: int) -> float:
    """The RSS a 95 % profile-likelihood interval admits: RSS·(1 + F(0.95; 1, dof)/dof)."""
    return rss * (1 + float(stats.f.ppf(0.95, 1, dof)) / dof)


def inner_rss(fun: Callable[[np.ndarray], np.ndarray], jac: Callable[[np.ndarray], np.ndarray], x0: np.ndarray,
              lower: np.ndarray, upper: np.ndarray, what: str) -> float:
    """The least RSS of an inner fit of a profile: bounded least squares from x0 with the Jacobian `jac`. One that
    stops unconverged is continued once from where it stopped with four times the budget; if that does not converge
    either, ProfileFitError naming `what`: an unconverged RSS is not the profile's least, and no profile point may
    rest on it (an end from it could lie where the profile has none)."""
    kw = {"jac": jac, "bounds": (lower, upper), "x_scale": "jac", "xtol": 1e-12, "ftol": 1e-12, "gtol": 1e-12}
    res = optimize.least_squares(fun, x0, max_nfev=5000, **kw)
    if not res.success:
        res = optimize.least_squares(fun, np.clip(res.x, lower, upper), max_nfev=20000, **kw)
    if not res.success:
        raise ProfileFitError(f"{what}: the inner fit did not converge ({res.message})")
    return float(res.fun @ res.fun)


def parameter_interval(resid: Residuals, theta: np.ndarray, rss: float, dof: int, lower: np.ndarray,
                       upper: np.ndarray, j: int, half: float) -> tuple[float, float]:
    """Parameter j's 95 % profile-likelihood interval within [lower_j, upper_j]: {v : RSS_j(v) ≤ RSS·(1 +
    F(0.95; 1, dof)/dof)}, RSS_j(v) the least RSS with θ_j = v and the others within their bounds (as
    stats.bounded_least_squares does for linear models)."""
    level = cut(rss, dof)
    others = [i for i in range(len(theta)) if i != j]

    def excess(v: float) -> float:
        def full(x: np.ndarray) -> np.ndarray:
            f = theta.copy()
            f[others] = x
            f[j] = v
            return f
        start = np.clip(theta[others], lower[others] + 1e-12, upper[others] - 1e-12)
        return inner_rss(lambda x: resid(full(x)), lambda x: resid.jacobian(full(x))[:, others], start,
                         lower[others], upper[others], f"profile of parameter {j} at {v:g}") - level

    step = float(half) if np.isfinite(half) and half > 0 else 0.1 * max(1.0, abs(float(theta[j])))
    return (profile_end(excess, float(theta[j]), step, -1, float(lower[j])),
            profile_end(excess, float(theta[j]), step, +1, float(upper[j])))


def rss_predicting(resid: Residuals, theta: np.ndarray, c: float, nb: float, w: float, lower: np.ndarray,
                   upper: np.ndarray) -> float:
    """The least RSS of the parameters within [lower, upper] whose time per iteration at block nb MiB and wait w ms
    is c ms (no less than the model's least there: the caller's walk stops at it); ProfileFitError when that fit does
    not converge. Every model's time per iteration grows with the service time s = s0 + nb/bw, so for given c and
    the model's own parameter (δ, z; overlap: c at the wait, where any s up to it gives c) s is fixed, and the
    parameters predicting c are a box of inner variables: f ∈ [0, 1] places 1/bw between its floor and s/nb (s0 =
    s − nb/bw ≥ its bound), and the own parameter's range is narrowed to where s stays at least its least. Boxes keep
    the inner fit the same bounded least squares as the others. θ (the fit's estimate) gives the starting point."""
    model = resid.model
    eps, s0_min = float(lower[1]), float(lower[0])
    smin = s0_min + eps * nb
    lo, hi = [0.0], [1.0]                    # f, then the own parameter (or overlap's share g of the wait)
    if model == "oversleep":
        lo.append(float(lower[2]))
        hi.append(max(c - w - smin, lo[1]) if w > 0 else float(upper[2]))
    elif model == "zero_skip":
        hi.append(float(upper[2]))
        lo.append(min(max(float(lower[2]), 1.0 - c / (w + smin)), hi[1]))
    flat = model == "overlap" and w > smin and c <= w * (1 + 1e-9)   # the prediction is the wait: s ≤ w
    if flat:
        lo.append(0.0)
        hi.append(1.0)

    def service(u: np.ndarray) -> tuple[float, float]:
        """s (ms) and ds/du₁ (0 where s is held at its least, by rounding at the least prediction)."""
        if model == "oversleep":
            s, d = (c - w - u[1], -1.0) if w > 0 else (c, 0.0)
        elif model == "zero_skip":
            s, d = c / (1.0 - u[1]) - w, c / (1.0 - u[1]) ** 2
        elif model == "overlap":
            s, d = (smin + u[1] * (w - smin), w - smin) if flat else (c, 0.0)
        else:
            s, d = c - w, 0.0
        return (s, d) if s >= smin else (smin, 0.0)

    def full(u: np.ndarray) -> np.ndarray:
        s, _ = service(u)
        tau = eps + u[0] * ((s - s0_min) / nb - eps)
        return np.asarray([s - nb * tau, tau, *([u[1]] if len(theta) == 3 else [])], dtype=float)

    def dfull(u: np.ndarray) -> np.ndarray:
        """∂θ/∂u: θ₀ = s − nb·τ, θ₁ = τ = ε + f·((s − s0_min)/nb − ε), and the own parameter itself."""
        s, ds = service(u)
        d = np.zeros((len(theta), len(u)))
        d[1, 0] = (s - s0_min) / nb - eps
        d[0, 0] = -nb * d[1, 0]
        if len(u) > 1:
            d[1, 1] = u[0] * ds / nb
            d[0, 1] = ds * (1.0 - u[0])
            if len(theta) == 3:
                d[2, 1] = 1.0
        return d

    lo_a, hi_a = np.asarray(lo), np.asarray(hi)
    start = np.asarray([0.5] + [float(x) for x in theta[2:]], dtype=float)
    if flat:
        start = np.asarray([0.5, (theta[0] + nb * theta[1] - smin) / (w - smin)])
    s_start, _ = service(np.clip(start, lo_a, hi_a))
    room = (s_start - s0_min) / nb - eps
    start[0] = (theta[1] - eps) / room if room > 0 else 0.5
    free = hi_a - lo_a > 1e-12 * np.maximum(1.0, np.abs(lo_a))     # f always: a degenerate box is held fixed
    fixed = np.clip(start, lo_a, hi_a)

    def inner(x: np.ndarray) -> np.ndarray:
        u = fixed.copy()
        u[free] = x
        return u

    pad = np.minimum(1e-9, 0.25 * (hi_a[free] - lo_a[free]))
    x0 = np.clip(start[free], lo_a[free] + pad, hi_a[free] - pad)
    return inner_rss(lambda x: resid(full(inner(x))),
                     lambda x: (resid.jacobian(full(inner(x))) @ dfull(inner(x)))[:, free], x0, lo_a[free],
                     hi_a[free], f"{model}: profile of the prediction at {c:g} ms per iteration")


__all__ = ["Residuals", "cut", "inner_rss", "parameter_interval", "rss_predicting"]
