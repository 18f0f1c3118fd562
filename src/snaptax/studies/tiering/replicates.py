"""The tiering claims' values over independent replicates (issue 47.3), part of the tiering analysis.

A replicate is one qcow2 timeline per pool on a fresh emulated pool, engine and fio processes (plan.qcow2_variants;
the recorded variants `sas_pool`, `tier_pool`, `sas_pool@r1`, ... split by plan.split_replicate). Each claim's value
is formed once per replicate, from that replicate's timelines alone, and its interval is the t pivot over the
replicates (snaptax.inference), never over the batch means or seconds within one timeline:

    <pool>.<phase>.ratio            the phase's mean IOPS over the initial phase's, in one timeline (the means of
                                    the batch means tables.phase_samples gives; the consolidation window cut to the
                                    commit): inference.ratio_estimate over the replicates, pct_log;
    tier_pool.<phase>.at_tier_speed the misplacement model at that replicate's SSD-served shares with its own fitted
                                    τ_hdd (misplacement.fit_model on its per-second points) and the SSD tier's speed:
                                    inference.log_estimate of the log ratios, pct_log;
    tier_over_sas.with              within each replicate, the tiered pool's measured with-snapshot ratio over the
                                    SAS-only pool's (ratios formed within one sitting, never across): log_estimate,
                                    pct_log; tier_over_sas.with_at_tier_speed the same with the tiered pool's ratio
                                    at the SSD tier's speed (the model's prediction);
    tier_pool.initial.model_rate_pct  the tiered pool's measured initial IOPS over the rate the emulated pool's own
                                    model gives at that phase's SSD-served share (how near the harness serves the
                                    flash tier): log_estimate, pct_log;
    initial_over_sas                within each replicate, the tiered pool's initial IOPS over the SAS-only pool's,
                                    both measured: ratio_estimate, pct_log.

With two or more replicates the value and its 95 % interval are the estimate's (Value.of_estimate), and the verdict
rule judges it from three. With one (smoke, quick, runs made before replicates) there is no spread between
replicates: the value keeps the one timeline's own interval (batch means or the fit's, for the paper to quote as
description, its method says so) and carries the one-replicate pivot (n = 1, no standard error), so the claim is
not judged (n < 3) — it never counts the batch means as n. Pure.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from ...inference import Estimate, log_estimate, ratio_estimate
from ...values import Value
from .misplacement import at_tier_speed, fit_model
from .plan import POOLS, STUDY, TIERED, engine_of, pool_of, replicate_of
from .tables import RATIO_PHASES

COLUMNS = ["variant", "pool", "replicate", "phase", "iops", "initial_iops", "ratio_pct", "at_tier_speed_pct"]


def per_replicate(seconds: pd.DataFrame, phases: pd.DataFrame, model_us: dict[str, dict[str, float]]) \
        -> pd.DataFrame:
    """One row per qcow2 timeline (every replicate of each pool) and ratio phase: the phase's mean IOPS, its
    initial phase's, their ratio in %, and on the tiered pool the misplacement model's ratio at the SSD tier's speed
    from this replicate's own fit and shares (nan where it has none: the pool did not learn, e.g. at smoke)."""
    if phases.empty:
        return pd.DataFrame(columns=COLUMNS)
    q = phases[phases.pool.map(engine_of) == "qcow2"]
    rows = []
    for variant in sorted(set(q.pool), key=lambda v: (replicate_of(v), v)):
        v = q[q.pool == variant]
        init = v[v.phase == "initial"]
        if init.empty:
            continue
        speed = pd.DataFrame(columns=["phase", "ratio_pct"])
        if pool_of(variant) == TIERED:
            speed = at_tier_speed(v, fit_model(seconds, variant), model_us)
        at_speed = dict(zip(speed.phase, speed.ratio_pct, strict=True))
        initial_iops = float(init.iops.iloc[0])
        for r in v[v.phase.isin(RATIO_PHASES)].itertuples():
            rows.append({"variant": variant, "pool": pool_of(variant), "replicate": replicate_of(variant),
                         "phase": r.phase, "iops": float(r.iops), "initial_iops": initial_iops,
                         "ratio_pct": float(r.ratio_pct),
                         "at_tier_speed_pct": float(at_speed.get(r.phase, math.nan))})
    return pd.DataFrame(rows, columns=COLUMNS)


def estimates(reps: pd.DataFrame) -> dict[str, Estimate]:
    """The claim-bearing values' estimates over the replicates (see the module's docstring), by value key."""
    k = STUDY
    out: dict[str, Estimate] = {}
    for pool in POOLS:
        for phase in RATIO_PHASES:
            r = reps[(reps.pool == pool) & (reps.phase == phase)] if not reps.empty else reps
            if len(r):
                out[f"{k}.{pool}.{phase}.ratio"] = ratio_estimate(r.iops.to_numpy(), r.initial_iops.to_numpy(),
                                                                  "pct_log")
            if pool == TIERED and len(r):
                out[f"{k}.{pool}.{phase}.at_tier_speed"] = _pct_log(r.at_tier_speed_pct.to_numpy())
    if not reps.empty:
        sas = reps[(reps.pool == "sas_pool") & (reps.phase == "with")].set_index("replicate").ratio_pct
        tier = reps[(reps.pool == TIERED) & (reps.phase == "with")].set_index("replicate")
        both = sorted(set(sas.index) & set(tier.index))
        if both:
            for key, col in (("with", "ratio_pct"), ("with_at_tier_speed", "at_tier_speed_pct")):
                out[f"{k}.tier_over_sas.{key}"] = _pct_log(100 * tier[col][both].to_numpy() / sas[both].to_numpy())
        # the two pools' initial rates, paired within each replicate (one sitting): C002-4, measured
        init = reps.drop_duplicates(["pool", "replicate"]).pivot(index="replicate", columns="pool",
                                                                   values="initial_iops")
        if {"sas_pool", TIERED} <= set(init.columns) and len(paired := init[["sas_pool", TIERED]].dropna()):
            out[f"{k}.initial_over_sas"] = ratio_estimate(paired[TIERED].to_numpy(),
                                                               paired["sas_pool"].to_numpy(), "pct_log")
    return out


def model_rate_value(phases: pd.DataFrame, model_us: dict[str, dict[str, float]]) -> Value:
    """tier_pool.initial.model_rate_pct (the module's docstring): per qcow2 replicate of the tiered pool, its
    initial phase's mean IOPS × the pool model's time per I/O at that phase's SSD-served share p,
    p·τ_ssd + (1 − p)·τ_hdd (model_us[TIERED]), in %; over the replicates from two on, else the one value."""
    key = f"{STUDY}.{TIERED}.initial.model_rate_pct"
    tau = model_us.get(TIERED, {})
    ssd, hdd = tau.get("ssd_us_per_io", math.nan), tau.get("hdd_us_per_io", math.nan)
    init = phases[(phases.phase == "initial") & (phases.pool.map(pool_of) == TIERED)
                  & (phases.pool.map(engine_of) == "qcow2")] if not phases.empty else phases
    pct = np.array([100 * r.iops * (r.ssd_share * ssd + (1 - r.ssd_share) * hdd) / 1e6 for r in init.itertuples()],
                   dtype=float)
    est = _pct_log(pct)
    if est.n >= 2:
        return Value.of_estimate(key, est, "%", 0, method=f"t over {est.n} independent replicates (pct_log)")
    ok = pct[np.isfinite(pct) & (pct > 0)]
    return Value(key, float(ok[0]) if len(ok) else math.nan, "%", digits=0)


def _pct_log(pct: np.ndarray) -> Estimate:
    """A ratio in % per replicate as a pct_log estimate (a ratio ≤ 0 or undefined left out: no log)."""
    x = np.asarray(pct, dtype=float)
    ok = np.isfinite(x) & (x > 0)
    return log_estimate(np.log(x[ok] / 100), "pct_log")


def over_replicates(v: Value, est: Estimate) -> Value:
    """`v` (the first timeline's value: its interval from within that timeline) as the value over the replicates:
    the estimate's value and interval from two replicates on; with fewer, `v`'s own number and interval with the
    estimate's pivot (n = 1 or 0: not judged, n < 3), the method saying so."""
    if est.n >= 2:
        return Value.of_estimate(v.key, est, v.unit, v.digits,
                                 method=f"t over {est.n} independent timelines ({est.scale})")
    within = f"{v.method}, within one timeline" if v.method else "one timeline"
    return dataclasses.replace(v, n=est.n, se=est.se, dof=est.dof, scale=est.scale, independent=est.independent,
                               method=f"{within}; {est.n} independent replicate(s): not judged")


def replicate_values(reps: pd.DataFrame, planned: int, learned: dict[int, bool]) -> list[Value]:
    """How many replicates the run planned and measured (a replicate counts when both pools' timelines have a
    ratio), and of the tiered pool's replicates how many learned before their initial phase (`learned`: its
    learn_done verdict per replicate)."""
    k = STUDY
    if reps.empty:
        measured = 0
    else:
        per = reps.groupby("replicate").pool.agg(lambda p: set(p) >= set(POOLS))
        measured = int(per.sum())
    return [Value(f"{k}.replicates_planned", float(planned), "replicates"),
            Value(f"{k}.replicates", float(measured), "replicates"),
            Value(f"{k}.{TIERED}.learned_replicates", float(sum(learned.values())) if learned else math.nan,
                  "replicates")]


__all__ = ["per_replicate", "estimates", "model_rate_value", "over_replicates", "replicate_values"]
