"""Estimates from independent replicates, and the tests the verdict rule makes on them.

An Estimate is a value measured over n independent replicates (each a run of its own: a fresh engine, device and
fio process) with a Student-t pivot: on its pivot scale x the estimate's error is t-distributed with `dof` degrees
of freedom and standard error `se`. The value a reader sees is y = g(x), g monotone:

    scale        g(x)               what it reports
    linear       x                  a mean over replicates, a difference, a count per I/O
    log          exp(x)             a geometric mean, a ratio of paired runs
    pct_log      100·exp(x)         a ratio in per cent (100 = no change)
    loss_log     100·(1 − exp(x))   a loss in per cent (0 = no loss) from a ratio x = log(with/without)
    chg_log      100·(exp(x) − 1)   a change in per cent (0 = no change), e.g. a time's growth per snapshot

Any interval, and the p-value of any one-sided statement about y, is computed on the pivot scale and mapped
through g, so a ratio's interval stays positive and a loss's stays below 100 %.

The tests (the paper's verdict rule, snaptax.claims.VERDICT_RULE):
  p_within(lo, hi)   two one-sided tests (TOST) that y lies inside [lo, hi]: the larger of the two one-sided
                     p-values; p < 0.05 ⟺ the 90 % interval lies inside.
  p_beyond(b, side)  one-sided test that y lies beyond b on `side` (+1 above, −1 below); p < 0.05 ⟺ the 90 %
                     interval lies wholly beyond b.
  p_outside(lo, hi)  that y lies outside [lo, hi], on the side of the estimate: one-sided p on that side;
                     p < 0.025 ⟺ the 95 % interval lies wholly outside.
holm() adjusts the p-values of a family (Holm 1979): a step-down Bonferroni that controls the family-wise error.
tost_replicates() is the number of replicates two one-sided tests need for a given power.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from .stats import sps

Scale = Literal["linear", "log", "pct_log", "loss_log", "chg_log"]
SCALES: tuple[Scale, ...] = ("linear", "log", "pct_log", "loss_log", "chg_log")
MIN_REPLICATES = 3           # a judged value rests on at least this many independent runs


def forward(scale: Scale, x: float) -> float:
    """g: the pivot scale to the reported one."""
    if scale == "linear":
        return x
    if scale == "log":
        return math.exp(x)
    if scale == "pct_log":
        return 100 * math.exp(x)
    if scale == "chg_log":
        return 100 * (math.exp(x) - 1)
    return 100 * (1 - math.exp(x))


def inverse(scale: Scale, y: float) -> float:
    """g⁻¹: a reported value on the pivot scale (−inf / +inf beyond the scale's range: a ratio ≤ 0, a loss ≥ 100)."""
    if scale == "linear":
        return y
    r = (y if scale == "log" else y / 100 if scale == "pct_log" else 1 + y / 100 if scale == "chg_log"
         else 1 - y / 100)
    return math.log(r) if r > 0 else -math.inf


def increasing(scale: Scale) -> bool:
    return scale != "loss_log"


@dataclass(frozen=True)
class Estimate:
    """A value over n independent replicates with a t pivot (see the module's docstring)."""

    pivot: float
    se: float
    dof: int
    n: int
    scale: Scale = "linear"
    independent: bool = True     # the replicates are independent runs (False: samples within one run)

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"unknown scale {self.scale!r} (one of {', '.join(SCALES)})")

    @property
    def value(self) -> float:
        return forward(self.scale, self.pivot)

    @property
    def defined(self) -> bool:
        return self.dof >= 1 and math.isfinite(self.pivot) and math.isfinite(self.se)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The two-sided interval at `level` on the reported scale, low end first (nan without a pivot)."""
        if not self.defined:
            return math.nan, math.nan
        h = float(sps.t.ppf(0.5 + level / 2, self.dof)) * self.se
        a, b = forward(self.scale, self.pivot - h), forward(self.scale, self.pivot + h)
        return (a, b) if a <= b else (b, a)

    def _p_above(self, y: float) -> float:
        """One-sided p-value for 'the reported value lies above y'."""
        if not self.defined:
            return math.nan
        x = inverse(self.scale, y)
        if self.se == 0:
            above_pivot = self.pivot > x
            return 0.0 if above_pivot == increasing(self.scale) else 1.0
        t = (self.pivot - x) / self.se
        # above y on the reported scale is above x on the pivot scale when g increases, below when it decreases
        return float(sps.t.sf(t, self.dof) if increasing(self.scale) else sps.t.cdf(t, self.dof))

    def p_beyond(self, bound: float, side: int) -> float:
        """One-sided p-value that the reported value lies beyond `bound` on `side` (+1: above, −1: below)."""
        p = self._p_above(bound)
        return p if side > 0 else 1 - p if math.isfinite(p) else math.nan

    def p_within(self, low: float, high: float) -> float:
        """Two one-sided tests that the reported value lies inside [low, high]: the larger one-sided p-value."""
        return max(self.p_beyond(low, +1), self.p_beyond(high, -1))

    def p_outside(self, low: float, high: float) -> float:
        """That the reported value lies outside [low, high], on the side where the estimate lies (the smaller of the
        two one-sided p-values; a two-sided 95 % interval wholly outside ⟺ p < 0.025)."""
        return min(self.p_beyond(high, +1), self.p_beyond(low, -1))


def _t_estimate(x: np.ndarray, scale: Scale, independent: bool) -> Estimate:
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return Estimate(math.nan, math.nan, 0, 0, scale, independent)
    se = float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return Estimate(float(x.mean()), se, n - 1, n, scale, independent)


def mean_estimate(samples: ArrayLike, independent: bool = True) -> Estimate:
    """The arithmetic mean of replicates (linear scale)."""
    return _t_estimate(np.asarray(samples, dtype=float), "linear", independent)


def geometric_estimate(samples: ArrayLike, independent: bool = True) -> Estimate:
    """The geometric mean of strictly positive replicates (log scale); a sample ≤ 0 gives no estimate (nan)."""
    x = np.asarray(samples, dtype=float)
    if (x[np.isfinite(x)] <= 0).any():
        return Estimate(math.nan, math.nan, 0, int(np.isfinite(x).sum()), "log", independent)
    return _t_estimate(np.log(x), "log", independent)


def log_estimate(logs: ArrayLike, scale: Scale = "log", independent: bool = True) -> Estimate:
    """Replicates already on a log pivot (one log ratio, or a log change per step, per replicate), reported on
    `scale` (log, pct_log, loss_log or chg_log)."""
    if scale == "linear":
        raise ValueError("a log pivot is reported on a log scale: log, pct_log, loss_log or chg_log")
    return _t_estimate(np.asarray(logs, dtype=float), scale, independent)


def ratio_estimate(numerators: ArrayLike, denominators: ArrayLike, scale: Scale = "log",
                   independent: bool = True) -> Estimate:
    """The ratio of paired replicates a_i / b_i (each pair measured in one replicate), on the log scale; reported
    as a ratio (scale log), in per cent (pct_log) or as a loss in per cent (loss_log)."""
    if scale == "linear":
        raise ValueError("a ratio's pivot is its log: scale log, pct_log, loss_log or chg_log")
    a, b = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired samples of different lengths: {a.shape} and {b.shape}")
    ok = (a > 0) & (b > 0)
    return _t_estimate(np.log(a[ok] / b[ok]), scale, independent)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values of a family, in the given order (nan stays nan and does not count in the family)."""
    finite = [(p, i) for i, p in enumerate(p_values) if math.isfinite(p)]
    m = len(finite)
    out = [math.nan] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(finite)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def tost_power(n: int, sd: float, margin: float, delta: float = 0.0, alpha: float = 0.05) -> float:
    """Power of two one-sided tests at level alpha each that a mean lies within ±margin of its reference, when the
    true difference is delta and single replicates scatter with sd (all on the pivot scale): the probability that
    the 1 − 2α interval of the mean of n replicates lies inside the margin (exact, by integrating over the sampling
    distribution of s)."""
    if n < 2 or sd <= 0 or margin <= abs(delta):
        return 0.0 if n < 2 or margin <= abs(delta) else 1.0
    dof = n - 1
    tcrit = float(sps.t.ppf(1 - alpha, dof))
    se_per_s = 1 / math.sqrt(n)
    # s² ~ sd²·χ²(dof)/dof; given s, the mean is normal: P(|mean − delta_ref| window) from both one-sided tests
    qs = np.linspace(1e-6, 1 - 1e-6, 2001)
    s = sd * np.sqrt(sps.chi2.ppf(qs, dof) / dof)
    half = tcrit * s * se_per_s
    lo, hi = -margin + half, margin - half
    sigma_mean = sd / math.sqrt(n)
    p = np.where(hi > lo, sps.norm.cdf((hi - delta) / sigma_mean) - sps.norm.cdf((lo - delta) / sigma_mean), 0.0)
    return float(np.trapezoid(p, qs) / (qs[-1] - qs[0]))


def tost_replicates(sd: float, margin: float, power: float = 0.8, delta: float = 0.0, alpha: float = 0.05,
                    n_max: int = 200) -> int | None:
    """The fewest replicates (≥ MIN_REPLICATES) whose two one-sided tests reach `power` (None: not within n_max,
    e.g. when the margin is no wider than the true difference)."""
    for n in range(MIN_REPLICATES, n_max + 1):
        if tost_power(n, sd, margin, delta, alpha) >= power:
            return n
    return None


__all__ = ["Scale", "SCALES", "MIN_REPLICATES", "Estimate", "forward", "inverse", "mean_estimate",
           "geometric_estimate", "log_estimate", "ratio_estimate", "increasing", "holm", "tost_power",
           "tost_replicates"]
