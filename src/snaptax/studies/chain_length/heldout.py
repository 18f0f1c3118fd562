"""The chain model's held-out test (issue 48), part of the chain-length analysis: per configuration and job, the
service-time model (snaptax.models.chain) fitted on the sweep's chains up to the plan's HELDOUT_FIT_MAX_CHAIN (with
the no-snapshot runs before the sweep at n = 0) predicts the IOPS at every longer chain of the sweep's create phase.

Prediction interval: the fit is linear in (τ0, τ1, τL) on 1/IOPS (bounded to ≥ 0 as models.chain fits it), so
τ(n)'s standard error is √(x Σ xᵀ) with Σ the least-squares covariance (where a bound is active, a first-order
approximation), t with the fit's degrees of freedom (its residuals are the spread of the no-snapshot
runs: the fit passes through n = 1 and n = 2 exactly); on the log scale, se/τ. Measurement interval: each longer
chain is one run at quick, so its spread is taken from the no-snapshot runs before the sweep (the same job on the
same volume, independent fio runs): the standard deviation of their log IOPS, with their degrees of freedom. Pure.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...models import heldout as ho
from ...stats import bounded_least_squares
from .plan import HELDOUT_FIT_MAX_CHAIN

Key = tuple[str, str]
PREDICTS = "IOPS at chains longer than those it was fitted on"


def design(n: np.ndarray) -> np.ndarray:
    """The chain model's columns: 1, [n ≥ 1], max(n − 1, 0)."""
    n = np.asarray(n, dtype=float)
    return np.column_stack([np.ones_like(n), (n >= 1).astype(float), np.maximum(n - 1, 0)])


def predict(fit_n: np.ndarray, fit_iops: np.ndarray, n: int) -> tuple[float, float, int]:
    """(IOPS, log-scale standard error, dof) at chain length n from the chain model fitted on (fit_n, fit_iops)
    (nan se without degrees of freedom)."""
    x, y = design(fit_n), 1e6 / np.asarray(fit_iops, dtype=float)
    beta = np.asarray(bounded_least_squares(x, y, 0.0).beta)      # the model's fit: τ's ≥ 0 (models.chain)
    dof = len(y) - x.shape[1]
    x0 = design(np.array([n]))[0]
    tau = float(x0 @ beta)
    if dof < 1:
        return 1e6 / tau, math.nan, dof
    resid = y - x @ beta
    cov = float(resid @ resid) / dof * np.linalg.pinv(x.T @ x)
    return 1e6 / tau, math.sqrt(max(float(x0 @ cov @ x0), 0.0)) / tau, dof


def heldout_tests(sw: pd.DataFrame, profile: str) -> dict[Key, ho.HeldOut]:
    """Per configuration and job of the sweep `sw` (analyse.sweep(meas)), the held-out test at `profile`."""
    fit_max = HELDOUT_FIT_MAX_CHAIN.get(profile)
    out = {}
    for (variant, job), g in sw[sw.phase == "create"].groupby(["variant", "job"]):
        key = (str(variant), str(job))
        if fit_max is None:
            out[key] = ho.judge([], len(g), PREDICTS, not_tested=f"no held-out split declared for {profile}")
            continue
        fit, held = g[g.chain_length <= fit_max], g[g.chain_length > fit_max]
        if held.empty or not (fit.chain_length >= 2).any():
            out[key] = ho.judge([], len(fit), PREDICTS,
                                not_tested=f"no chain longer than the fitted {fit_max} at {profile}")
            continue
        base = np.log(g[g.chain_length == 0].iops.to_numpy())
        spread, spread_dof = (float(base.std(ddof=1)), len(base) - 1) if len(base) > 1 else (math.nan, 0)
        points = []
        for n, h in held.groupby("chain_length"):
            p, p_se, p_dof = predict(fit.chain_length.to_numpy(), fit.iops.to_numpy(), int(n))
            logs = np.log(h.iops.to_numpy())
            m = float(np.exp(logs.mean()))
            # one run: the single-run spread; several: that spread over their number (the runs' own spread is
            # the same kind of number, and one run has none)
            m_se = spread / math.sqrt(len(logs))
            points.append(ho.PointError(f"n{int(n)}", p, p_se, p_dof, m, m_se, spread_dof, len(logs)))
        out[key] = ho.judge(points, len(fit), PREDICTS)
    return out


__all__ = ["PREDICTS", "design", "predict", "heldout_tests"]
