"""The misplacement model (snaptax.models.tiering) on the tiered pool: fitted to its per-second (SSD-served share,
IOPS) points (fit_model), the phase ratios it gives with the SSD tier at its own speed (at_tier_speed), and the
what-ifs: other tiering cycles, flash as a write cache (what_if_table, what_if_curves)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...models import tiering as tm
from ...record import RunRecord
from .plan import (
    TIERED,
    pool_of,
)

MODEL_PHASES = ("initial", "settle", "with", "after", "relearned")   # per-second points the model is fitted to
WHAT_IF_CYCLES_S = {"24h": 86400.0, "1h": 3600.0, "5min": 300.0}
SEED_MIGRATION_B_S = 40e6                     # 12 GB per 5 min
SEED_DISK_BYTES = 100e9


def model_time_per_io(record: RunRecord) -> dict[str, dict[str, float]]:
    """Per pool, the emulated device's own µs per I/O per tier for the workload (measure.emulated_time_per_io)."""
    return {pool: dict(meta.get("study", {}).get("model_time_per_io") or {})
            for pool, meta in record.manifest.variants.items()}


def at_tier_speed(phases: pd.DataFrame, fit: tm.TierFit | None, model_us: dict[str, dict[str, float]]) \
        -> pd.DataFrame:
    """The tiered pool's phase ratios, per variant on it (qcow2, LVM thin), as the misplacement model gives them at
    the measured SSD-served shares, with the SSD tier at its own speed: τ_ssd from the emulated tier's model (the
    served emulator, one Python process, cannot deliver it: its lateness reaches ~10x the SSD's service time) or, on
    a real pool, the fitted τ_ssd; τ_hdd fitted on the qcow2 timeline. Interval: the ratio at the ends of τ_hdd's
    95 % interval (it is monotone in τ_hdd)."""
    columns = ["pool", "phase", "ssd_share", "ratio_pct", "ratio_low", "ratio_high", "n", "tau_ssd_us"]
    tier = phases[phases.pool.map(pool_of) == TIERED] if not phases.empty else phases
    if fit is None or tier.empty:
        return pd.DataFrame(columns=columns)
    tau_s = model_us.get(TIERED, {}).get("ssd_us_per_io", fit.tau_ssd_us)
    rows = []
    for variant in sorted(set(tier.pool)):
        v = tier[tier.pool == variant]
        if "initial" not in set(v.phase):
            continue
        p0 = float(v[v.phase == "initial"].ssd_share.iloc[0])
        for r in v[v.phase != "initial"].itertuples():
            def ratio(tau_h: float, p: float = float(r.ssd_share), p0: float = p0) -> float:
                return 100 * float(tm.time_per_io_us(p0, tau_s, tau_h) / tm.time_per_io_us(p, tau_s, tau_h))
            ends = sorted(ratio(t) for t in fit.ci95[1])
            rows.append({"pool": variant, "phase": r.phase, "ssd_share": r.ssd_share,
                         "ratio_pct": ratio(fit.tau_hdd_us), "ratio_low": ends[0], "ratio_high": ends[1],
                         "n": fit.points, "tau_ssd_us": tau_s})
    return pd.DataFrame(rows, columns=columns)


def fit_model(seconds: pd.DataFrame, variant: str = TIERED) -> tm.TierFit | None:
    """The misplacement model on the tiered pool's per-second (p, IOPS) points outside consolidation and
    learning (migrations and the commit's copy add I/O the model does not describe), of one timeline: `variant`,
    the first replicate's by default (another replicate's for the claims' values over replicates, replicates.py);
    None when the points do not span the share (the pool did not learn, e.g. at smoke)."""
    s = seconds[(seconds.pool == variant) & seconds.phase.isin(MODEL_PHASES) & (seconds.t_in_phase_s > 1.0)]
    try:
        return tm.fit(s.ssd_share.to_numpy(), s.iops.to_numpy())
    except ValueError:
        return None


def what_if_table(fit: tm.TierFit | None, phases: pd.DataFrame, tau_ssd_us: float,
                  read_fraction: float) -> pd.DataFrame:
    """The seed's pool with other cycles (loss duration at the seed's disk and migration rate) and with flash as a
    write cache (the ratio with a snapshot if every write were served by flash; the model with the SSD tier at
    `tau_ssd_us` and the fitted τ_hdd, as at_tier_speed); `read_fraction`: the load's, as the run recorded it."""
    rows = []
    for name, cycle in WHAT_IF_CYCLES_S.items():
        rows.append({"what": f"cycle {name}", "cycle_s": cycle,
                     "loss_hours": float(tm.loss_duration_s(cycle, SEED_DISK_BYTES, SEED_MIGRATION_B_S)) / 3600})
    tier = phases[(phases.pool == TIERED)] if not phases.empty else phases
    if fit is not None and not tier.empty and {"initial", "with"} <= set(tier.phase):
        p0 = float(tier[tier.phase == "initial"].ssd_share.iloc[0])
        pw = float(tier[tier.phase == "with"].ssd_share.iloc[0])
        # the share of reads served by SSD is not split out from the measured p: take p as the reads' share
        p_cached = float(tm.write_cache_share(pw, read_fraction))
        for what, p in (("measured share with snapshot", pw), ("flash write cache", p_cached)):
            ratio = tm.time_per_io_us(p0, tau_ssd_us, fit.tau_hdd_us) / tm.time_per_io_us(p, tau_ssd_us,
                                                                                         fit.tau_hdd_us)
            rows.append({"what": what, "ssd_share": p, "ratio_pct": 100 * float(ratio)})
    return pd.DataFrame(rows)


WHAT_IF_GRID_CYCLES_S = np.geomspace(60.0, 7 * 86400.0, 61)     # 1 min ... a week
WHAT_IF_GRID_SHARES = np.linspace(0.0, 1.0, 51)


def what_if_curves(fit: tm.TierFit | None, tau_ssd_us: float) -> pd.DataFrame:
    """The what-ifs as curves: (a) how long the loss lasts against the tiering cycle's length, for the seed's disk
    at its migration rate (curve 'loss_hours', x = cycle_s); (b) the rate with a snapshot, as % of a fully SSD-served
    initial rate, against the SSD-served share with the snapshot, from the misplacement model at the SSD tier's
    speed and the fitted τ_hdd, with the ends of τ_hdd's 95 % interval (curve 'ratio_pct', x = ssd_share). (b) is
    empty without a fit."""
    rows = [{"curve": "loss_hours", "x": float(c), "y": float(tm.loss_duration_s(c, SEED_DISK_BYTES,
                                                                                 SEED_MIGRATION_B_S)) / 3600,
             "low": math.nan, "high": math.nan} for c in WHAT_IF_GRID_CYCLES_S]
    if fit is not None and math.isfinite(tau_ssd_us):
        def ratio(p: float, tau_h: float) -> float:
            return 100 * float(tm.time_per_io_us(1.0, tau_ssd_us, tau_h) / tm.time_per_io_us(p, tau_ssd_us, tau_h))
        for p in WHAT_IF_GRID_SHARES:
            ends = sorted(ratio(float(p), t) for t in fit.ci95[1])
            rows.append({"curve": "ratio_pct", "x": float(p), "y": ratio(float(p), fit.tau_hdd_us), "low": ends[0],
                         "high": ends[1]})
    return pd.DataFrame(rows, columns=["curve", "x", "y", "low", "high"])
