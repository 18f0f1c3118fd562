"""The database-snapshot cost models' held-out test (issue 48), part of the db_snapshots analysis.

The three-parameter model (snaptax.models.db_snapshot: T0, τ1, τ2) has as many parameters as the levels k = 0, 1, 2
it is fitted on per device: it reproduces the levels' means and has nothing left to predict (descriptive only, by
construction). The identified model (plan.HELDOUT_FIT_DEVICE and its neighbours) is

    T = T0 + β · C                                                                      (s)

C the engine's copy work during the run (copy reads, copy writes and commits, thread-seconds on the engine's own
clock; 0 without snapshots), β the seconds of statement time per thread-second of copy work (the part of the copy
work the statement waits for). Two parameters, fitted by least squares on every run of HELDOUT_FIT_DEVICE (three
levels of k); it predicts the HELDOUT_DEVICE's mean duration at each k of HELDOUT_SNAPSHOTS from those runs' copy
work alone, never from their durations. The prediction's interval combines the fit's covariance (t with its
degrees of freedom) and the spread of the predicted runs' mean copy work; the measurement is the geometric mean
duration with its log-t interval. What it tests: that a statement waits for the same share of the engine's copy
work whatever device the copies go to. (Caveat: the copy work is counted in the same runs whose durations are
predicted, by the engine, not in a separate calibration run.) Pure.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...models import heldout as ho
from .plan import HELDOUT_DEVICE, HELDOUT_FIT_DEVICE, HELDOUT_SNAPSHOTS

COPY_KEYS = ("copy_read_s", "copy_write_s", "commit_s")
PREDICTS = (f"the statement's duration with snapshots on {HELDOUT_DEVICE} from the engine's copy work there "
            f"(fitted on {HELDOUT_FIT_DEVICE})")
THREE_LEVELS = "three parameters for three levels of k: it reproduces their means and has nothing left to predict"


def copy_work(runs: pd.DataFrame) -> pd.Series:
    """C per run: copy reads + copy writes + commits (thread-seconds); 0 in runs without snapshots."""
    c = runs[list(COPY_KEYS)].sum(axis=1, min_count=1)
    return c.where(runs.k > 0, 0.0)


def fit_copy_work(runs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int]:
    """(β = (T0, β), covariance, dof) of T = T0 + β·C by least squares over `runs`."""
    c = copy_work(runs).to_numpy()
    y = runs.duration_s.to_numpy()
    ok = np.isfinite(c) & np.isfinite(y)
    x = np.column_stack([np.ones(ok.sum()), c[ok]])
    beta, *_ = np.linalg.lstsq(x, y[ok], rcond=None)
    dof = int(ok.sum()) - 2
    if dof < 1:
        return beta, np.full((2, 2), np.nan), dof
    resid = y[ok] - x @ beta
    return beta, float(resid @ resid) / dof * np.linalg.pinv(x.T @ x), dof


def heldout_test(runs: pd.DataFrame, summary: pd.DataFrame) -> tuple[ho.HeldOut, np.ndarray, np.ndarray]:
    """The identified model's held-out test, with its fitted (T0, β) and their covariance."""
    fit = runs[runs.device == HELDOUT_FIT_DEVICE]
    held = runs[(runs.device == HELDOUT_DEVICE) & runs.k.isin(HELDOUT_SNAPSHOTS)]
    if fit.empty or held.empty or fit.k.nunique() < 3:
        return (ho.judge([], len(fit), PREDICTS, not_tested="the run lacks the fit's or the held-out device's runs"),
                np.full(2, np.nan), np.full((2, 2), np.nan))
    beta, cov, dof = fit_copy_work(fit)
    points = []
    for k, h in held.groupby("k"):
        c = copy_work(h).dropna().to_numpy()
        row = summary[(summary.device == HELDOUT_DEVICE) & (summary.k == k)].iloc[0]
        x0 = np.array([1.0, c.mean()])
        pred = float(x0 @ beta)
        var = float(x0 @ cov @ x0) + (beta[1] ** 2 * c.var(ddof=1) / len(c) if len(c) > 1 else math.nan)
        se = math.sqrt(var) / pred if var >= 0 and pred > 0 else math.nan
        n = int(row.runs)
        m_se = ho.log_se(float(row.duration_s), float(row.duration_low), float(row.duration_high), n - 1)
        points.append(ho.PointError(f"k{int(k)}", pred, se, dof, float(row.duration_s), m_se, n - 1, n))
    return ho.judge(points, len(fit), PREDICTS), beta, cov


__all__ = ["COPY_KEYS", "PREDICTS", "THREE_LEVELS", "copy_work", "fit_copy_work", "heldout_test"]
