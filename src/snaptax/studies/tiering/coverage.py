"""The SAS-only pool's coverage sweep (issue 46.4), part of the tiering analysis: the redo-log stand-in's share of
its initial rate kept with a snapshot, against the share of its L2 tables the cache holds, and seed 002's operating
point read off it.

Per sweep (plan.sweep_variant: one per replicate) and coverage c, keep(c) is the with-c run's mean IOPS over the
sweep's initial run's, in % (the timelines' ratio: the means of tables.phase_samples' batch means, fio's first
second left out); both runs are minutes apart in one sitting on one pool. Over the sweeps, per realised coverage
(whole L2 slices: plan.realised_coverage), keep is a ratio estimate over independent replicates (pct_log, t).

The operating point is the realised coverage at which keep crosses the seed's 12.2 % (C002-1a: 300 of 2450 IO/s),
linear between the neighbouring coverages that bracket it (standin_settings.crossing); its interval where the ends
of keep's intervals cross it (keep rises with the coverage, so the upper curve crosses at the lesser coverage),
constrained to [0, 1] as seed 000's point is (calibration). A sweep whose least coverage keeps more than 12.2 %
gives no coverage at which block-map reads alone cost the seed's loss: its nearest setting is QEMU's least cache,
and `implied.bound` says so. Whether the point lies within the seed system's own bound (plan.HEAP_BOUND: a host's
metadata heap against a full delta's grain tables) is a value of its own.

Where the rate went: per coverage the array's mean number of commands outstanding in the with-c run (Little's
law, tables.device_time) against the sweep's initial run, and its members' busy share, each the plain mean over
the sweeps (descriptions, not judged). A cache that misses could cost the array's work (a slice read per lookup)
or serialise the lookups (QEMU's qcow2 driver reads a missing L2 slice while it holds the image's lock); the
queue tells the two apart. Pure.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from ...inference import ratio_estimate
from ...values import Value
from ..standin_settings import crossing
from .plan import (
    HEAP_BOUND,
    SEED_SAS_KEEP_PCT,
    STUDY,
    SWEEP,
    SWEEP_COVERAGES,
    engine_of,
    realised_coverage,
    replicate_of,
    sweep_coverage,
    sweep_label,
)
from .tables import phase_samples

COLUMNS = ["variant", "replicate", "coverage", "realised", "iops", "initial_iops", "keep_pct", "device_queue",
           "initial_device_queue", "member_busy_pct"]
SUMMARY = ["realised", "label", "keep_pct", "keep_low", "keep_high", "n", "device_queue", "initial_device_queue",
           "member_busy_pct"]


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x)) if len(x) else math.nan


def recorded_coverages(events: Iterable[Mapping[str, Any]], variant: str) -> dict[Fraction, float]:
    """The coverage each of `variant`'s sweep points realised, as its snapshot event recorded it (the engine's
    set_cache: whole slices), by the coverage planned."""
    return {Fraction(str(e["coverage"])): float(e["realised"]) for e in events
            if e.get("variant") == variant and e.get("event") == "snapshot" and "coverage" in e and "realised" in e}


def sweep_table(seconds: pd.DataFrame, meas: pd.DataFrame, disk_bytes: int,
                events: Iterable[Mapping[str, Any]] = ()) -> pd.DataFrame:
    """One row per sweep and coverage: the with-c run's mean IOPS, the sweep's initial mean IOPS and keep in %; the
    realised coverage as the run's events recorded it (`events`: the manifest's), else as plan.realised_coverage
    gives it for the disk."""
    if meas.empty:
        return pd.DataFrame(columns=COLUMNS)
    events = list(events)
    sweeps = meas[meas.pool.map(engine_of) == SWEEP]
    rows = []
    for variant in sorted(set(sweeps.pool), key=lambda v: (replicate_of(v), v)):
        v = sweeps[sweeps.pool == variant]
        recorded = recorded_coverages(events, variant)
        initial = _mean(phase_samples(seconds, meas, variant, "initial"))
        queue0 = _mean(v[v.phase == "initial"].get("device_queue", pd.Series(dtype=float)).to_numpy())
        for phase in v.phase:
            parsed = sweep_coverage(phase)
            if parsed is None or parsed[0] != "with":
                continue
            iops = _mean(phase_samples(seconds, meas, variant, phase))
            run = v[v.phase == phase]
            rows.append({"variant": variant, "replicate": replicate_of(variant), "coverage": parsed[1],
                         "realised": recorded.get(parsed[1], float(realised_coverage(parsed[1], disk_bytes))),
                         "iops": iops,
                         "initial_iops": initial,
                         "keep_pct": 100 * iops / initial if initial > 0 else math.nan,
                         "device_queue": _mean(run.get("device_queue", pd.Series(dtype=float)).to_numpy()),
                         "initial_device_queue": queue0,
                         "member_busy_pct": _mean(run.get("member_busy_pct", pd.Series(dtype=float)).to_numpy())})
    return pd.DataFrame(rows, columns=COLUMNS)


def sweep_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per realised coverage (ascending): keep over the sweeps, its 95 % interval (nan from fewer than two) and n."""
    rows = []
    for realised, g in table.groupby("realised", sort=True) if not table.empty else ():
        est = ratio_estimate(g.iops.to_numpy(), g.initial_iops.to_numpy(), "pct_log")
        low, high = est.interval(0.95)
        rows.append({"realised": float(realised), "label": sweep_label(Fraction(realised).limit_denominator(4096)),
                     "keep_pct": est.value, "keep_low": low, "keep_high": high, "n": est.n,
                     **{c: float(g[c].mean()) for c in ("device_queue", "initial_device_queue", "member_busy_pct")},
                     "estimate": est})
    return pd.DataFrame(rows, columns=[*SUMMARY, "estimate"])


def implied_coverage(summary: pd.DataFrame, target_pct: float = SEED_SAS_KEEP_PCT) -> tuple[float, float, float]:
    """(point, low, high): where keep, and its interval's upper and lower curves, cross target_pct (unconstrained:
    ±inf outside the sweep, nan where undefined)."""
    cov = list(summary.realised)

    def at(column: str) -> float:
        return crossing(cov, [-float(x) for x in summary[column]], -target_pct)
    return at("keep_pct"), at("keep_high"), at("keep_low")


def bound_text(point: float) -> str:
    if math.isnan(point):
        return "no finite keep"
    if point == -math.inf:
        return ("below the sweep's least coverage: even QEMU's least cache keeps more than the seed's share, so "
                "block-map reads alone do not cost the seed's loss; the least cache is the nearest setting")
    if point == math.inf:
        return "above the sweep's greatest coverage"
    return "inside the sweep"


def shares_text(shares: Iterable[Fraction]) -> str:
    """Shares of the tables in words: '1/12, 1/6, 1/4, 1/2 and 1'."""
    said = [str(c) for c in shares]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def sweep_values(summary: pd.DataFrame, meas: pd.DataFrame | None = None) -> list[Value]:
    """The sweep's keep per coverage and the operating point read off it (the module's docstring), and the
    emulator's worst lateness over the sweeps' runs (`meas`: the run's measurements table), the array's queue and
    members' busy share at both ends; for a run without a sweep only the design's constants."""
    k = f"{STUDY}.sweep"
    i = f"{STUDY}.implied"
    # the design's constants, in every run (the paper describes the full profile's sweep whatever a build reads)
    out = [Value(f"{k}.design_coverages", text=shares_text(SWEEP_COVERAGES)),
           Value(f"{k}.seed_keep_pct", SEED_SAS_KEEP_PCT, "%", digits=1),
           Value(f"{i}.heap_bound", HEAP_BOUND, "", digits=2)]
    if summary.empty:
        return out
    late = meas[meas.pool.map(engine_of) == SWEEP].lateness_pct if meas is not None and not meas.empty else None
    out += [Value(f"{k}.coverages", text=shares_text(Fraction(c).limit_denominator(4096) for c in summary.realised)),
            Value(f"{k}.worst_lateness_pct", float(late.max()) if late is not None and len(late) else math.nan, "%",
                  digits=0),
            Value(f"{k}.points", float(len(summary)), "coverages"),
            Value(f"{k}.replicates", float(summary.n.max()), "replicates")]
    method = "t over the sweeps (pct_log)"
    out += [Value.of_estimate(f"{k}.keep.{r.label}", r.estimate, "%", 1, method=method)
            for r in summary.itertuples(index=False)]
    for end, r in (("least", summary.iloc[0]), ("greatest", summary.iloc[-1])):
        out += [Value(f"{k}.{end}.coverage", float(r.realised), "", digits=3),
                Value.of_estimate(f"{k}.{end}.keep", r.estimate, "%", 1, method=method),
                Value(f"{k}.{end}.device_queue", float(r.device_queue), "commands", n=int(r.n), digits=1,
                      method="mean over the sweeps"),
                Value(f"{k}.{end}.member_busy_pct", float(r.member_busy_pct), "%", n=int(r.n), digits=0,
                      method="mean over the sweeps")]
    out.append(Value(f"{k}.initial_device_queue", float(summary.initial_device_queue.mean()), "commands",
                     n=int(summary.n.max()), digits=1, method="mean over the sweeps"))
    point, low, high = implied_coverage(summary)
    clip = [min(max(x, 0.0), 1.0) if not math.isnan(x) else math.nan for x in (point, low, high)]
    out += [Value(f"{i}.coverage", clip[0], "", clip[1], clip[2], int(summary.n.min()), 3,
                  method="where the sweep's keep crosses the seed's 12.2 % (linear between neighbours)"),
            Value(f"{i}.method", text="read off the SAS-only pool's coverage sweep"),
            Value(f"{i}.bound", text=bound_text(point)),
            Value(f"{i}.within_heap_bound", text=heap_bound_side(*clip))]
    return out


def heap_bound_side(point: float, low: float, high: float) -> str:
    """Whether the inferred point lies within the seed system's heap bound (HEAP_BOUND): decided on its interval
    ('yes' when it lies wholly at or below the bound, 'no' when wholly above, 'undecided' when it includes the
    bound), on the point alone when there is no interval (one sweep); 'n/a' without a point."""
    if math.isnan(point):
        return "n/a"
    if math.isnan(low) or math.isnan(high):
        return "yes" if point <= HEAP_BOUND else "no"
    return "yes" if high <= HEAP_BOUND else "no" if low > HEAP_BOUND else "undecided"


__all__ = ["recorded_coverages", "sweep_table", "sweep_summary", "implied_coverage", "bound_text", "shares_text",
           "heap_bound_side", "sweep_values"]
