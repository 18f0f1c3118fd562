"""Held-out tests: does a fitted model predict what it was not fitted to?

A model is fitted on its study's declared fit set and predicts each point of the declared held-out set (both fixed
in the study's plan before the data are looked at). For a held-out point i with predicted value p_i and measured
value y_i (both positive: a duration, a slowdown, a rate) the prediction error is on the log scale,

    e_i = ln(p_i / y_i),       reported as 100·(p_i / y_i − 1) %  (positive: the model predicts too much),

with a standard error that adds the prediction's and the measurement's, se_i² = se_p² + se_y² (each from its 95 %
interval, on the log scale), and Welch–Satterthwaite degrees of freedom.

Verdict (one rule for every model, an equivalence test as the claims' verdict rule):
  predicts          every held-out point's 90 % interval of e_i lies inside ±ln(1 + bound): two one-sided tests
                    at α = 0.05 each, per point; requiring all points to pass (an intersection-union test) keeps the
                    level at α without a multiplicity adjustment;
  descriptive only  otherwise: a point's error is (or may be) larger than the bound, a point has no interval (a
                    measurement of one run without a stated spread, a prediction without degrees of freedom), or
                    there is no held-out point at all. The reason is reported beside the verdict.

The bound is a declared constant, never chosen from the data: BOUND, the registration's smallest effect that
matters for a duration or a ratio of durations (registration.SMALLEST_EFFECT["time"], 10 %), since every model here
predicts a duration, a time per I/O or a ratio of them. A model predicting within it predicts closer than the least
difference a practitioner acts on.

`quoted` gives the values a study's analysis reports as `<study>.<model>.heldout.*` (the study builds the Values:
models do not import values). Pure functions; no data are read here.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from scipy import stats as sps

from ..registration import SMALLEST_EFFECT

BOUND = SMALLEST_EFFECT["time"]      # relative held-out error a model that predicts stays within (0.10)
ALPHA = 0.05                          # each one-sided test's level: the 90 % interval must lie inside the bound
ModelVerdict = Literal["predicts", "descriptive only"]
PREDICTS: ModelVerdict = "predicts"
DESCRIPTIVE: ModelVerdict = "descriptive only"


def log_se(value: float, low: float, high: float, dof: float, level: float = 0.95) -> float:
    """The standard error on the log scale implied by a positive value's two-sided interval at `level` with `dof`
    degrees of freedom: (ln high − ln low) / (2·t); nan without a (positive, finite) interval or degrees of freedom.
    Exact for intervals built on the log scale (geometric means, paired ratios, the delta method on ln T); for a
    linear-scale interval it is its log-scale width, a first-order approximation."""
    if not (dof >= 1 and low > 0 and high > 0 and math.isfinite(low) and math.isfinite(high) and value > 0):
        return math.nan
    return (math.log(high) - math.log(low)) / (2 * float(sps.t.ppf(0.5 + level / 2, dof)))


@dataclass(frozen=True)
class PointError:
    """One held-out point: what the model predicted (with its log-scale standard error and degrees of freedom),
    what was measured (likewise; n the measurement's repeats), and the error between them."""

    label: str
    predicted: float
    predicted_se: float
    predicted_dof: float
    measured: float
    measured_se: float
    measured_dof: float
    n: int = 1

    @property
    def log_error(self) -> float:
        """e = ln(predicted / measured)."""
        if not (self.predicted > 0 and self.measured > 0):
            return math.nan
        return math.log(self.predicted / self.measured)

    @property
    def se(self) -> float:
        """√(se_p² + se_y²) on the log scale (a prediction without an interval counts as exact only when given se 0)."""
        return math.hypot(self.predicted_se, self.measured_se)

    @property
    def dof(self) -> float:
        """Welch–Satterthwaite degrees of freedom of the combined standard error."""
        parts = [(s, d) for s, d in ((self.predicted_se, self.predicted_dof), (self.measured_se, self.measured_dof))
                 if s > 0]
        if not parts or any(not (math.isfinite(s) and d >= 1) for s, d in parts):
            return math.nan
        return sum(s ** 2 for s, _ in parts) ** 2 / sum(s ** 4 / d for s, d in parts)

    @property
    def defined(self) -> bool:
        return math.isfinite(self.log_error) and math.isfinite(self.se) and self.se > 0 and math.isfinite(self.dof)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The error's interval at `level` on the log scale (nan when not defined)."""
        if not self.defined:
            return math.nan, math.nan
        h = float(sps.t.ppf(0.5 + level / 2, self.dof)) * self.se
        return self.log_error - h, self.log_error + h

    def within(self, bound: float, alpha: float = ALPHA) -> bool:
        """Two one-sided tests: the 1 − 2α interval of e lies inside ±ln(1 + bound)."""
        lo, hi = self.interval(1 - 2 * alpha)
        b = math.log(1 + bound)
        return self.defined and -b < lo and hi < b

    @property
    def error_pct(self) -> float:
        return pct(self.log_error)


def pct(log_error: float) -> float:
    """A log error as the relative error in per cent, 100·(e^x − 1)."""
    return 100 * math.expm1(log_error) if math.isfinite(log_error) else math.nan


def point(label: str, predicted: float, predicted_low: float, predicted_high: float, predicted_dof: float,
          measured: float, measured_low: float, measured_high: float, measured_dof: float, n: int = 1) -> PointError:
    """A held-out point from 95 % intervals (log_se converts each; nan ends: no interval)."""
    return PointError(label, predicted, log_se(predicted, predicted_low, predicted_high, predicted_dof), predicted_dof,
                      measured, log_se(measured, measured_low, measured_high, measured_dof), measured_dof, n)


class Quoted(NamedTuple):
    """One quoted number or text of a held-out test, in Value's field names (Value(key, **q._asdict()))."""

    value: float = math.nan
    unit: str = ""
    low: float = math.nan
    high: float = math.nan
    n: int = 0
    digits: int = 0
    text: str | None = None
    method: str = ""


@dataclass(frozen=True)
class HeldOut:
    """A model's held-out test: its points, the bound, the verdict and why."""

    points: tuple[PointError, ...]
    bound: float
    fit_points: int
    predicts: str       # what the model predicts, in words (the paper's table prints it)
    verdict: ModelVerdict
    reason: str

    @property
    def worst(self) -> PointError | None:
        """The held-out point whose error is largest in size (by its estimate)."""
        finite = [p for p in self.points if math.isfinite(p.log_error)]
        return max(finite, key=lambda p: abs(p.log_error)) if finite else None

    @property
    def rms_pct(self) -> float:
        """Root mean square of the points' log errors, as a relative error in per cent (nan without points)."""
        e = [p.log_error for p in self.points if math.isfinite(p.log_error)]
        return pct(math.sqrt(sum(x * x for x in e) / len(e))) if e else math.nan

    def quoted(self) -> dict[str, Quoted]:
        """The values `<study>.<model>.heldout.<name>`: error (the worst point's, %, with its 95 % interval), worst
        (its label), rms_pct, bound (%), n (held-out points), fit_points, verdict and reason (text), predicts."""
        w = self.worst
        lo, hi = w.interval() if w else (math.nan, math.nan)
        method = f"log error, t with {w.dof:.1f} dof (prediction and measurement)" if w and w.defined else ""
        return {"error": Quoted(w.error_pct if w else math.nan, "%", pct(lo), pct(hi), w.n if w else 0, 1,
                                None, method),
                "worst": Quoted(text=w.label if w else "none"),
                "rms_pct": Quoted(self.rms_pct, "%", digits=1),
                "bound": Quoted(100 * self.bound, "%"),
                "n": Quoted(float(len(self.points)), "points"),
                "fit_points": Quoted(float(self.fit_points), "points"),
                "verdict": Quoted(text=self.verdict),
                "reason": Quoted(text=self.reason),
                "predicts": Quoted(text=self.predicts)}


def judge(points: Sequence[PointError], fit_points: int, predicts: str, bound: float = BOUND,
         alpha: float = ALPHA, not_tested: str = "") -> HeldOut:
    """The held-out test of one model (see the module's docstring). `not_tested`: why there are no held-out points
    (printed as the reason when `points` is empty)."""
    if not 0 < bound:
        raise ValueError(f"a held-out bound must be positive, got {bound}")
    pts = tuple(points)
    b = f"±{100 * bound:g} %"
    if not pts:
        return HeldOut(pts, bound, fit_points, predicts, DESCRIPTIVE, not_tested or "no held-out points")
    negative = [p.label for p in pts if p.predicted <= 0]
    if negative:      # e.g. a fitted time per I/O extrapolated below zero
        return HeldOut(pts, bound, fit_points, predicts, DESCRIPTIVE,
                       f"the prediction is not positive at {_some(negative, len(pts))}")
    undefined = [p.label for p in pts if not p.defined]
    if undefined:
        return HeldOut(pts, bound, fit_points, predicts, DESCRIPTIVE,
                       f"no error interval at {_some(undefined, len(pts))}: untested there")
    outside = [p.label for p in pts if not p.within(bound, alpha)]
    if outside:
        return HeldOut(pts, bound, fit_points, predicts, DESCRIPTIVE,
                       f"the 90 % interval of the error is not within {b} at {_some(outside, len(pts))}")
    return HeldOut(pts, bound, fit_points, predicts, PREDICTS,
                   f"every held-out point's 90 % interval of the error lies within {b}")


def _some(labels: list[str], total: int, shown: int = 5) -> str:
    """Point labels for a reason: all of a few; of many, how many of all and the first few (a reason is printed
    in a sentence, and a list of 90 labels is no sentence)."""
    if len(labels) <= shown + 1:
        return ", ".join(labels)
    return f"{len(labels)} of the {total} points ({', '.join(labels[:shown])}, …)"


__all__ = ["BOUND", "ALPHA", "ModelVerdict", "PREDICTS", "DESCRIPTIVE", "log_se", "PointError", "pct", "point",
           "Quoted", "HeldOut", "judge"]
