"""Confidence intervals from repeated measurements.

Every effect the paper prints carries a 95 % interval computed here from its repeats — never the min–max of the
repeats. With fewer than two repeats there is no interval (low = high = nan) and a verdict on it is
"inconclusive". A strictly positive quantity averaged over repeats (a rate, a duration) gets its interval on the
log scale (geometric_mean_interval), so that it stays positive; one that can be zero or negative (a difference, a
count per I/O) gets the linear one (mean_interval).
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike


class _LazyModule:
    """A module imported on first use: scipy.stats takes about a second to import, and what imports this module
    only for its types (the command line's help and argument checks, every `python -m snaptax` process) needs none
    of it."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


sps: Any = _LazyModule("scipy.stats")
optimize: Any = _LazyModule("scipy.optimize")

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """An estimate with a two-sided confidence interval. n: the repeats it came from; method: how."""

    estimate: float
    low: float
    high: float
    n: int
    method: str

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    @property
    def defined(self) -> bool:
        return self.n >= 2 and math.isfinite(self.low) and math.isfinite(self.high)

    def scaled(self, factor: float, offset: float = 0.0) -> Interval:
        """The interval of factor·x + offset (a negative factor swaps the ends)."""
        lo, hi = sorted((factor * self.low + offset, factor * self.high + offset))
        return Interval(factor * self.estimate + offset, lo, hi, self.n, self.method)


@dataclass(frozen=True)
class LeastSquares:
    """An ordinary least-squares fit y ≈ X·β with t-based intervals per coefficient (nan without residual degrees
    of freedom, i.e. when the fit is exact)."""

    beta: tuple[float, ...]
    ci: tuple[tuple[float, float], ...]
    r2: float
    dof: int


def least_squares(X: ArrayLike, y: ArrayLike, confidence: float = CONFIDENCE) -> LeastSquares:
    """β = argmin |y − Xβ|²; each coefficient's interval β ± t(dof)·√(s²·(XᵀX)⁺)ᵢᵢ with s² = |residual|²/dof,
    dof = points − coefficients; r2 = 1 − SS_res/SS_tot (1 when y is constant)."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    dof = len(y) - X.shape[1]
    ss_res = float(resid @ resid)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    if dof > 0:
        cov = ss_res / dof * np.linalg.pinv(X.T @ X)
        half = sps.t.ppf(0.5 + confidence / 2, dof) * np.sqrt(np.diag(cov))
    else:
        half = np.full(X.shape[1], np.nan)
    return LeastSquares(tuple(float(b) for b in beta),
                        tuple((float(b - h), float(b + h)) for b, h in zip(beta, half, strict=True)),
                        1 - ss_res / ss_tot if ss_tot > 0 else 1.0, dof)


@dataclass(frozen=True)
class BoundedLeastSquares(LeastSquares):
    """A least-squares fit with lower bounds on the coefficients (their physical range) and profile-likelihood
    intervals; at_bound: the coefficients whose estimate lies on its bound."""

    at_bound: tuple[bool, ...] = ()


class ProfileFitError(ValueError):
    """An inner fit of a profile likelihood (the least RSS with one quantity held at a value) did not converge. Its
    RSS is then only some RSS at that value, not the least: an excess made of it could put a crossing, and so an
    interval end, where the profile has none. It supplies no profile point; profile_end lets this propagate, and
    a caller that can do without the interval catches it (as a ValueError)."""


def _profile_rss(X: np.ndarray, y: np.ndarray, lower: np.ndarray, j: int, v: float) -> float:
    """min |y − Xβ|² over β ≥ lower with β_j = v; ProfileFitError when the solver reports no convergence."""
    others = [i for i in range(X.shape[1]) if i != j]
    r = y - X[:, j] * v
    if not others:
        return float(r @ r)
    sub = optimize.lsq_linear(X[:, others], r, bounds=(lower[others], np.inf))
    if not sub.success:
        raise ProfileFitError(f"profile of coefficient {j} at {v:g}: the inner least squares did not converge "
                              f"({sub.message})")
    res = r - X[:, others] @ sub.x
    return float(res @ res)


def profile_end(excess: Any, b: float, step: float, sign: int, limit: float, max_doublings: int = 60) -> float:
    """One end of a profile interval: walking from the estimate b in direction `sign` (doubling the step), where
    `excess` (the profile's RSS less its cut) crosses 0; `limit` (the bound on that side, ±inf for none) when the
    profile stays within the cut up to it; ±inf when it stays within the cut for `max_doublings` doublings of the
    step towards no bound (the data put no end on that side). `excess` raises (ProfileFitError) where its inner fit
    fails rather than return an unconverged RSS; the error propagates, so no end rests on a fit that did not
    converge."""
    if math.isfinite(limit) and excess(limit) <= 0:
        return limit
    x = b + sign * step
    for _ in range(max_doublings):
        if math.isfinite(limit) and sign * (x - limit) >= 0:
            x = limit            # the crossing lies between b and the bound, where excess > 0
            break
        if excess(x) > 0:
            break
        step *= 2
        x = b + sign * step
    else:
        return sign * math.inf
    lo, hi = sorted((b, x))
    return float(optimize.brentq(excess, lo, hi, xtol=1e-10 * max(1.0, abs(b))))


def bounded_least_squares(X: ArrayLike, y: ArrayLike, lower: ArrayLike,
                          confidence: float = CONFIDENCE) -> BoundedLeastSquares:
    """β = argmin |y − Xβ|² subject to β ≥ lower (scipy's lsq_linear), with each coefficient's profile-likelihood
    interval {v ≥ lower_j : RSS_j(v) ≤ RSS_min·(1 + F(confidence; 1, dof)/dof)}, RSS_j(v) the least RSS with β_j = v
    and the others within their bounds. Where no bound is active this is exactly the t interval of
    least_squares (the model is linear); where one is, the interval ends at the bound instead of crossing it (no
    clipping: the ends are where the data put them within the physical range). nan intervals without residual
    degrees of freedom (dof = 0); points exactly on the model give zero-width ones, as least_squares does. r2 as
    least_squares."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    lo = np.broadcast_to(np.asarray(lower, dtype=float), (X.shape[1],)).copy()
    beta = optimize.lsq_linear(X, y, bounds=(lo, np.inf), lsmr_tol="auto", tol=1e-12).x
    beta = np.maximum(beta, lo)
    resid = y - X @ beta
    dof = len(y) - X.shape[1]
    rss = float(resid @ resid)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    at_bound = tuple(bool(np.isclose(b, lb, rtol=0, atol=1e-9 * max(1.0, abs(float(np.max(np.abs(y))))))
                          and np.isfinite(lb)) for b, lb in zip(beta, lo, strict=True))
    if dof < 1:
        ci = tuple((math.nan, math.nan) for _ in beta)
    elif rss <= 1e-24 * max(float(y @ y), 1e-300):     # points exactly on the model (to rounding): no spread
        ci = tuple((float(b), float(b)) for b in beta)
    else:
        factor = 1 + float(sps.f.ppf(confidence, 1, dof)) / dof
        scale = math.sqrt(rss / dof) * np.sqrt(np.diag(np.linalg.pinv(X.T @ X)))
        ends = []
        for j, b in enumerate(beta):
            # the solver's own RSS at the estimate, should it exceed the joint minimum by its tolerance
            cut = max(rss, _profile_rss(X, y, lo, j, float(b))) * factor

            def excess(v: float, j: int = j, cut: float = cut) -> float:
                return _profile_rss(X, y, lo, j, v) - cut
            step = max(float(scale[j]), 1e-12 * max(1.0, abs(float(b))))
            ends.append((profile_end(excess, float(b), step, -1, float(lo[j])),
                         profile_end(excess, float(b), step, +1, math.inf)))
        ci = tuple(ends)
    return BoundedLeastSquares(tuple(float(b) for b in beta), ci, 1 - rss / ss_tot if ss_tot > 0 else 1.0, dof,
                               at_bound)


def mean_interval(samples: ArrayLike, confidence: float = CONFIDENCE) -> Interval:
    """Student-t interval of the mean of independent samples: x̄ ± t(n−1)·s/√n."""
    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, "t")
    mean = float(x.mean())
    if n < 2:
        return Interval(mean, math.nan, math.nan, n, "t")
    half = float(sps.t.ppf(0.5 + confidence / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return Interval(mean, mean - half, mean + half, n, "t")


LOG_T = "log t"
LOG_T_FALLBACK = "t (linear: a sample <= 0)"


def _exp_interval(logs: np.ndarray, method: str, confidence: float) -> Interval:
    """exp of the Student-t interval of the mean of `logs` (mean_interval on the log scale): the estimate
    exp(mean(log x)) and the ends exp(mean(log x) ± t(n−1)·s_log/√n); nan ends below two samples."""
    iv = mean_interval(logs, confidence)
    if iv.n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, method)
    return Interval(math.exp(iv.estimate), math.exp(iv.low) if iv.defined else math.nan,
                    math.exp(iv.high) if iv.defined else math.nan, iv.n, method)


def geometric_mean_interval(samples: ArrayLike, confidence: float = CONFIDENCE) -> Interval:
    """Interval of a strictly positive quantity averaged over independent repeats (IOPS, a duration, a rate, s/GiB,
    a run's ratio to an estimate), on the log scale: the geometric mean
        G = exp(mean(log x_i)),   interval exp(mean(log x_i) ± t(n−1)·s_log/√n),
    s_log the sample standard deviation of log x_i; in the unit of x (a rate stays a rate). Run-to-run noise of
    such quantities is multiplicative (a drifting disk scales them), and this interval is never below zero: a linear
    t interval x̄ ± t·s/√n with 2-3 repeats can reach below zero for a positive quantity. G ≤ x̄ (equal when the
    repeats agree); the interval is asymmetric about G, wider above. method "log t"; below two samples nan ends;
    non-finite samples are left out (as in mean_interval).

    A sample ≤ 0 (a rate of 0 is a real measurement: nothing completed) cannot be logged, and leaving it out would
    bias the estimate upwards. Then the whole group falls back to the linear interval of its arithmetic mean
    (mean_interval), method "t (linear: a sample <= 0)", so the value says which rule it got."""
    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x)]
    if (x <= 0).any():
        iv = mean_interval(x, confidence)
        return Interval(iv.estimate, iv.low, iv.high, iv.n, LOG_T_FALLBACK)
    return _exp_interval(np.log(x), LOG_T, confidence)


def proportion_interval(outcomes: ArrayLike, confidence: float = CONFIDENCE) -> Interval:
    """Clopper-Pearson (exact binomial) interval of the share of true outcomes, in [0, 1]: k of n successes give
    [B(α/2; k, n−k+1), B(1−α/2; k+1, n−k)] with B the beta quantile (0 and 1 at k = 0 and k = n). A t interval
    on 0/1 outcomes is wrong for small n (it leaves [0, 1]); this one is conservative and never does."""
    x = np.asarray(outcomes, dtype=float)
    x = x[np.isfinite(x)]
    n, k = len(x), int(x.sum())
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, "clopper-pearson")
    alpha = 1 - confidence
    low = 0.0 if k == 0 else float(sps.beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(sps.beta.ppf(1 - alpha / 2, k + 1, n - k))
    if n < 2:   # one outcome: no interval, as for every estimate here
        low = high = math.nan
    return Interval(k / n, low, high, n, "clopper-pearson")


def paired_ratio_interval(numerators: ArrayLike, denominators: ArrayLike,
                          confidence: float = CONFIDENCE) -> Interval:
    """Interval of the ratio of two configurations measured in pairs (neighbours in time), on the log scale:
    exp(mean(log(a_i/b_i)) ± t·s/√n). The log keeps the interval of a ratio positive and symmetric in
    multiplicative terms; pairing cancels drift that both members of a pair share."""
    a = np.asarray(numerators, dtype=float)
    b = np.asarray(denominators, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired samples of different lengths: {a.shape} and {b.shape}")
    ok = (a > 0) & (b > 0)
    return _exp_interval(np.log(a[ok] / b[ok]), "paired log-ratio t", confidence)


def ratio_of_means_interval(numerators: ArrayLike, denominators: ArrayLike,
                            confidence: float = CONFIDENCE) -> Interval:
    """Interval of mean(a)/mean(b) for unpaired samples (Fieller's theorem is overkill at our n; this uses the
    delta method on the log ratio: var ≈ s_a²/(n_a·ā²) + s_b²/(n_b·b̄²), Welch–Satterthwaite degrees of freedom)."""
    a = np.asarray(numerators, dtype=float)
    b = np.asarray(denominators, dtype=float)
    na, nb = len(a), len(b)
    if na == 0 or nb == 0:
        return Interval(math.nan, math.nan, math.nan, 0, "ratio of means")
    ratio = float(a.mean() / b.mean())
    n = min(na, nb)
    if na < 2 or nb < 2:
        return Interval(ratio, math.nan, math.nan, n, "ratio of means")
    va = a.var(ddof=1) / (na * a.mean() ** 2)
    vb = b.var(ddof=1) / (nb * b.mean() ** 2)
    se = math.sqrt(va + vb)
    if se == 0:
        return Interval(ratio, ratio, ratio, n, "ratio of means")
    df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
    half = float(sps.t.ppf(0.5 + confidence / 2, df) * se)
    return Interval(ratio, ratio * math.exp(-half), ratio * math.exp(half), n, "ratio of means")


def pooled_log_sd(groups: list[ArrayLike]) -> tuple[float, int]:
    """The within-group standard deviation of log(x) pooled over groups, and its degrees of freedom
    Σ(n_i − 1): the run-to-run noise of a device measured at many points of a sweep, each point a few repeats."""
    ss, dof = 0.0, 0
    for g in groups:
        x = np.log(np.asarray(g, dtype=float))
        x = x[np.isfinite(x)]
        if len(x) > 1:
            ss += float(((x - x.mean()) ** 2).sum())
            dof += len(x) - 1
    return (math.sqrt(ss / dof) if dof else math.nan), dof


def pooled_log_ratio_interval(numerators: ArrayLike, denominators: ArrayLike, log_sd: float, dof: int,
                              confidence: float = CONFIDENCE) -> Interval:
    """Interval of the ratio of the geometric means of two unpaired groups when their noise is known from a pooled
    estimate (pooled_log_sd over the whole sweep): exp(Δ ± t(dof)·s·√(1/n_a + 1/n_b)), Δ the difference of the
    mean logs. With two repeats per point a per-point spread is nearly meaningless (t(1) = 12.7, and two runs
    that happen to agree give a falsely narrow interval); the pooled spread has the dof of the whole sweep."""
    a = np.log(np.asarray(numerators, dtype=float))
    b = np.log(np.asarray(denominators, dtype=float))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if not len(a) or not len(b):
        return Interval(math.nan, math.nan, math.nan, 0, "pooled log-ratio t")
    d = float(a.mean() - b.mean())
    n = min(len(a), len(b))
    if dof < 1 or not math.isfinite(log_sd):
        return Interval(math.exp(d), math.nan, math.nan, n, "pooled log-ratio t")
    half = float(sps.t.ppf(0.5 + confidence / 2, dof)) * log_sd * math.sqrt(1 / len(a) + 1 / len(b))
    return Interval(math.exp(d), math.exp(d - half), math.exp(d + half), n, "pooled log-ratio t")


def ratio_of_ratios_interval(estimate: float, a: tuple[float, float], b: tuple[float, float], n: int,
                             method: str = "ratio of ratios (log half-widths combined)") -> Interval:
    """Interval of a ratio of two independent ratios r_a / r_b (possibly scaled, e.g. to %), from their intervals
    a = (low, high) and b = (low, high): on the log scale the half-widths add in quadrature,
        h = √((log(a_high/a_low)/2)² + (log(b_high/b_low)/2)²),
    and the interval is estimate·exp(±h). `estimate` is the caller's r_a / r_b (with its scale), n the repeats it
    rests on (the smaller of the two). If an end of either interval is not finite and positive there is no
    interval (nan ends, method "ratio of ratios")."""
    if not all(math.isfinite(x) and x > 0 for x in (*a, *b)):
        return Interval(estimate, math.nan, math.nan, n, "ratio of ratios")
    h = math.hypot(math.log(a[1] / a[0]) / 2, math.log(b[1] / b[0]) / 2)
    return Interval(estimate, estimate * math.exp(-h), estimate * math.exp(h), n, method)


def ratio_across_time_interval(later: ArrayLike, earlier: ArrayLike, confidence: float = CONFIDENCE) -> Interval:
    """Interval of mean(later)/mean(earlier) for two groups measured minutes apart, where `earlier`'s members are
    spread over time and `later`'s are neighbours in time (e.g. the runs after deleting a chain against the
    no-snapshot runs of the pairs before it). Drift over minutes, not the scatter within a group, dominates such a
    difference, and neighbours share their drift: `later` counts as one observation of a quantity whose spread
    over time is that of `earlier` on the log scale (s). So, on the log scale,
        log(ā_later / ā_earlier) ± t(n_earlier − 1) · s · √(1/n_earlier + 1),
    exponentiated. A ratio of means with Welch's intervals would treat the later group's members as independent
    and give an interval far too narrow."""
    a = np.asarray(later, dtype=float)
    b = np.asarray(earlier, dtype=float)
    a, b = a[np.isfinite(a) & (a > 0)], b[np.isfinite(b) & (b > 0)]
    if len(a) == 0 or len(b) == 0:
        return Interval(math.nan, math.nan, math.nan, 0, "ratio across time")
    ratio = float(a.mean() / b.mean())
    if len(b) < 2:
        return Interval(ratio, math.nan, math.nan, len(b), "ratio across time")
    spread = float(np.log(b).std(ddof=1))
    half = float(sps.t.ppf(0.5 + confidence / 2, len(b) - 1) * spread * math.sqrt(1 / len(b) + 1))
    return Interval(ratio, ratio * math.exp(-half), ratio * math.exp(half), len(b), "ratio across time")


REPEATS_MAX = 50     # repeats_for's search stops here: beyond it a design needs another plan, not more repeats


def repeats_for(cv: float, half_width: float, confidence: float = CONFIDENCE, n_max: int = REPEATS_MAX) -> int:
    """Smallest n whose t-interval of a mean has relative half-width ≤ half_width, for a coefficient of
    variation cv of single measurements (both as fractions): t(n−1)·cv/√n ≤ half_width."""
    if cv <= 0:
        return 2
    for n in range(2, n_max + 1):
        if sps.t.ppf(0.5 + confidence / 2, n - 1) * cv / math.sqrt(n) <= half_width:
            return n
    return n_max
