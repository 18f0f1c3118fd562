"""The misplacement model's held-out test (issue 48), part of the tiering analysis: its two tier speeds measured
apart from the phases it predicts, it predicts the tiered pool's phase ratios from their measured SSD-served shares.

    τ_hdd  the SAS-only pool's time per I/O before its snapshot (10⁶ / its initial IOPS): the same RAID5 of HDDs
           behind the same load, with nothing on flash;
    τ_ssd  the flash tier's speed as the tiered pool served it before the snapshot, once it had learned:
           τ_init = p0·τ_ssd + (1 − p0)·τ_hdd, so τ_ssd = (τ_init − (1 − p0)·τ_hdd) / p0 (p0 its SSD-served share);
    ratio  for each later phase at its measured share p: τ_init / (p·τ_ssd + (1 − p)·τ_hdd), against the measured
           IOPS of the phase over the initial IOPS (plan.HELDOUT_PHASES: the steady phases; the consolidation
           window's commit copies add I/O the model does not describe).

Nothing is fitted to the predicted phases: the per-second fit (misplacement.fit_model) uses them, this test does
not. The tiered pool's emulated flash is served late (its lateness is reported with the run), so its τ_ssd here is
the speed it was served at, not the flash model's: the test asks whether the share alone explains the phases.

Standard errors, on the log scale: the measured ratio's from the batch means of the phase and of the initial phase
(Welch); the prediction's from the SAS-only pool's batch means (τ_hdd's relative standard error, carried through
the prediction's sensitivity to τ_hdd numerically), with its n − 1 degrees of freedom. Per engine: qcow2 on the
two pools, and LVM thin where its per-second samples exist.

Replicates: the test reads the first replicate's timelines (the variants named as the pools, which every run has,
and beside which the LVM thin contrast was measured once); the engines' variant names given to it select them. Its
standard errors are therefore within one timeline (batch means), as before replicates; pooling the replicates
would predict each replicate's phases from its own initial phases and is left for the paper-grade runs. Pure."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from ...models import heldout as ho, tiering as tm
from .plan import HELDOUT_PHASES

PREDICTS = "the tiered pool's IOPS per phase over before its snapshot, from the SSD-served share and two tier speeds"
Samples = Callable[[str, str], np.ndarray]      # (pool variant, phase) → batch means of its IOPS


def _log_mean_se(x: np.ndarray) -> tuple[float, float, int]:
    """(mean, standard error of ln mean, dof) of batch means (nan se with fewer than two)."""
    m = float(np.mean(x)) if len(x) else math.nan
    if len(x) < 2 or not m > 0:
        return m, math.nan, 0
    return m, float(np.std(x, ddof=1)) / math.sqrt(len(x)) / m, len(x) - 1


def _welch(se1: float, d1: int, se2: float, d2: int) -> tuple[float, float]:
    se = math.hypot(se1, se2)
    if not (math.isfinite(se) and se > 0 and d1 >= 1 and d2 >= 1):
        return math.nan, math.nan
    return se, se ** 4 / (se1 ** 4 / d1 + se2 ** 4 / d2)


def predicted_ratio(p: float, p0: float, tau_init_us: float, tau_hdd_us: float) -> float:
    """τ_init / τ(p) with τ_ssd from the initial phase (see the module's docstring); nan when τ_ssd is not
    positive (the initial phase was no faster than the HDDs at its share)."""
    if not p0 > 0:
        return math.nan
    tau_ssd = (tau_init_us - (1 - p0) * tau_hdd_us) / p0
    if not tau_ssd > 0:
        return math.nan
    return float(tau_init_us / tm.time_per_io_us(p, tau_ssd, tau_hdd_us))


def heldout_test(phases: pd.DataFrame, samples: Samples, engines: dict[str, tuple[str, str]]) -> ho.HeldOut:
    """The held-out test over `engines` (label → (SAS-only pool variant, tiered pool variant)); `phases`: the
    analysis's phases table (its SSD-served shares), `samples`: tables.phase_samples bound to the run."""
    points = []
    shares = {(r.pool, r.phase): float(r.ssd_share) for r in phases.itertuples()} if not phases.empty else {}
    for label, (sas, tier) in engines.items():
        sas_init, sas_se, sas_dof = _log_mean_se(samples(sas, "initial"))
        init_x = samples(tier, "initial")
        init, init_se, init_dof = _log_mean_se(init_x)
        p0 = shares.get((tier, "initial"), math.nan)
        if not (sas_init > 0 and init > 0 and math.isfinite(p0)):
            continue
        tau_hdd, tau_init = 1e6 / sas_init, 1e6 / init
        for phase in HELDOUT_PHASES:
            x = samples(tier, phase)
            p = shares.get((tier, phase), math.nan)
            if not len(x) or not math.isfinite(p):
                continue
            m, m_se, m_dof = _log_mean_se(x)
            measured = m / init
            se_y, dof_y = _welch(m_se, m_dof, init_se, init_dof)
            pred = predicted_ratio(p, p0, tau_init, tau_hdd)
            # sensitivity of ln(pred) to ln(τ_hdd), numerically, times τ_hdd's relative standard error
            step = 1e-3
            hi = predicted_ratio(p, p0, tau_init, tau_hdd * math.exp(step))
            lo = predicted_ratio(p, p0, tau_init, tau_hdd * math.exp(-step))
            slope = (math.log(hi) - math.log(lo)) / (2 * step) if hi > 0 and lo > 0 else math.nan
            se_p = abs(slope) * sas_se if math.isfinite(slope) else math.nan
            points.append(ho.PointError(f"{label} {phase}", pred, se_p, sas_dof, measured, se_y, dof_y, len(x)))
    return ho.judge(points, 2, PREDICTS, not_tested="no tiered phase with both pools' samples")


__all__ = ["PREDICTS", "predicted_ratio", "heldout_test"]
