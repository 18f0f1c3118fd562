"""The consolidation model's held-out test (issue 48), part of the lifecycle analysis: leave one iterative deletion
out (plan.HELDOUT). Every iterative deletion of a run (the grid's and the two loads') is held out in turn; the model
(models.consolidation.fit: t0, c0, b from the commit times, a from the helper's growth) is fitted on the iterations
of all the other deletions and predicts the held-out one's

  - iterations, each a point of the held-out rule (models.heldout), in two tests:
      commit  t_k = t0 + D_k / (c0 − b·r_k): the time to commit the D_k bytes the iteration committed beside the
              writer's measured rate r_k;
      growth  D_{k+1} = a·r_k·t_k: what the helper grew to while the iteration ran (its measured t_k);
  - outcome: converges within the iteration limit or not (models.consolidation.iterate from the deletion's own
    delta, threshold and writer rate), counted against the measured outcomes beside what always guessing the fitted
    deletions' majority outcome scores (the in-sample count the paper printed before could not tell the two apart).

The prediction's standard error is a new observation's: the fit set's spread of log(measured ÷ fitted) times
√(1 + 1/n) (commit: n − 3 degrees of freedom, three parameters; growth: n − 1). The held-out iteration is one
observation whose scatter that spread already is, so the measurement's own standard error is 0. An iteration
without a writer rate (the writer had stopped) is neither fitted nor predicted. Pure: tables in, tests out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...models import consolidation as cm, heldout as ho

PREDICTS = {"commit": "each iteration's commit time of a deletion it was not fitted on",
            "growth": "each iteration's helper growth of a deletion it was not fitted on"}


def outcome_words(measured: bool, predicted: bool | None) -> str:
    """A deletion's outcome and a model's prediction of it in words (predicted None: not tested)."""
    def said(converged: bool) -> str:
        return "converged" if converged else "did not converge"
    return f"{said(measured)} ({'not tested' if predicted is None else f'predicted: {said(predicted)}'})"


@dataclass(frozen=True)
class OutcomeCheck:
    """Leave-one-deletion-out outcomes: per held-out deletion (variant, index) whether it converged, whether the
    model fitted without it predicted so (None: no fit without it), and the majority outcome of the others."""

    rows: tuple[tuple[str, int, bool, bool | None, bool], ...]

    @property
    def tested(self) -> int:
        return sum(r[3] is not None for r in self.rows)

    @property
    def predicted(self) -> int:
        return sum(r[3] is not None and r[3] == r[2] for r in self.rows)

    def words(self, variant: str) -> str:
        """What happened to `variant`'s held-out deletion and what the model fitted without it said ('' if none)."""
        return next((outcome_words(measured, predicted) for v, _, measured, predicted, _ in self.rows
                     if v == variant), "")

    @property
    def majority(self) -> int:
        """How many of the tested deletions the others' majority outcome gets right."""
        return sum(r[3] is not None and r[4] == r[2] for r in self.rows)


def _new_observation_se(log_resid: np.ndarray, params: int) -> tuple[float, int]:
    """A new observation's standard error on the log scale from the fit set's log residuals (`params` fitted):
    their spread × √(1 + 1/n), with n − params degrees of freedom (nan without any)."""
    dof = len(log_resid) - params
    if dof < 1:
        return math.nan, 0
    return float(np.sqrt(np.sum(log_resid ** 2) / dof)) * math.sqrt(1 + 1 / len(log_resid)), dof


def _fit(its: pd.DataFrame) -> cm.ConsolidationFit | None:
    try:
        return cm.fit(its.delta, its.seconds, its.writer_iops, its.grown)
    except (ValueError, RuntimeError):       # too few iterations, or not identifiable without the held-out one
        return None


def _commit_points(f: cm.ConsolidationFit, fit_its: pd.DataFrame, held: pd.DataFrame, label: str
                   ) -> list[ho.PointError]:
    def predicted(t: pd.DataFrame) -> np.ndarray:
        c = f.c(t.writer_iops.to_numpy())     # no commit throughput left beside the writer: no prediction
        return np.where(c > 0, cm.commit_time_s(t.delta.to_numpy(), np.where(c > 0, c, 1.0), f.t0.value), np.nan)

    fitted = predicted(fit_its)
    ok = np.isfinite(fitted) & (fitted > 0)
    se, dof = _new_observation_se(np.log(fit_its.seconds.to_numpy()[ok] / fitted[ok]), 3)
    return [ho.PointError(f"{label}k{int(k)}", float(p), se, dof, float(t), 0.0, math.nan)
            for k, p, t in zip(held.k, predicted(held), held.seconds, strict=True)]


def _growth_points(f: cm.ConsolidationFit, fit_its: pd.DataFrame, held: pd.DataFrame, label: str
                   ) -> list[ho.PointError]:
    fitted = f.u(fit_its.writer_iops.to_numpy()) * fit_its.seconds.to_numpy()     # D_{k+1} = a·r·t_k
    ok = (fitted > 0) & (fit_its.grown.to_numpy() > 0)
    logs = np.log(fit_its.grown.to_numpy()[ok] / fitted[ok])
    se, dof = _new_observation_se(logs - logs.mean(), 1)      # a is one mean ratio: its residuals about it
    predicted = f.u(held.writer_iops.to_numpy()) * held.seconds.to_numpy()
    return [ho.PointError(f"{label}k{int(k)}", float(p), se, dof, float(g), 0.0, math.nan)
            for k, p, g in zip(held.k, predicted, held.grown, strict=True)]


def heldout_tests(deletions: pd.DataFrame, iterations: pd.DataFrame, threshold: float, max_iterations: int,
                  max_stun_s: float) -> tuple[dict[tuple[str, str], ho.HeldOut], OutcomeCheck]:
    """The two held-out tests (keyed ('consolidation', 'commit' | 'growth')) and the outcomes, leaving each
    iterative deletion of `deletions` out in turn (`iterations`: analyse.deletion_tables' second table)."""
    its = iterations[np.isfinite(iterations.writer_iops)] if not iterations.empty else iterations
    dels = deletions[deletions.method == "iterative"] if not deletions.empty else deletions
    points: dict[str, list[ho.PointError]] = {"commit": [], "growth": []}
    fitted_on: list[int] = []        # iterations each fit used (both tests share the fit)
    outcomes: list[tuple[str, int, bool, bool | None, bool]] = []
    for _, d in dels.iterrows():
        mine = (its.variant == d.variant) & (its["index"] == d["index"]) if not its.empty else None
        fit_its = its[~mine] if mine is not None else its
        held = its[mine] if mine is not None else its
        others = dels[~((dels.variant == d.variant) & (dels["index"] == d["index"]))]
        majority = bool(others.converged.mean() > 0.5) if len(others) else False
        f = _fit(fit_its) if len(fit_its) else None
        if f is None:
            outcomes.append((str(d.variant), int(d["index"]), bool(d.converged), None, majority))
            continue
        label = f"{d.variant}#{int(d['index'])} "
        points["commit"] += _commit_points(f, fit_its, held, label)
        points["growth"] += _growth_points(f, fit_its, held, label)
        fitted_on.append(len(fit_its))
        tr = f.simulate(float(d.delta0_mib) * (1 << 20), float(d.writer_iops), threshold,
                        max_iterations=max_iterations, max_stun_s=max_stun_s)
        outcomes.append((str(d.variant), int(d["index"]), bool(d.converged), bool(tr.converged), majority))
    tests = {("consolidation", name): ho.judge(points[name], min(fitted_on, default=0), PREDICTS[name],
                                               not_tested="fewer than two iterative deletions to fit and hold out")
             for name in ("commit", "growth")}
    return tests, OutcomeCheck(tuple(outcomes))


__all__ = ["PREDICTS", "outcome_words", "OutcomeCheck", "heldout_tests"]
