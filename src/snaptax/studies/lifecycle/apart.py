"""The consolidation model with its parameters measured apart (issue 48.3, plan.HELDOUT_APART), part of the lifecycle
analysis. The apart variant measures, in repeats each on a fresh overlay (measure.apart):

  t0        the time of a helper snapshot plus the commit of an empty overlay beside the reader alone;
  c0        the throughput of committing an overlay filled in order (the delta a deletion starts with) beside the
            reader alone: D / (t − t0 of the same repeat);
  c_helper  the same for an overlay the writer alone filled (every helper's layout; runs of the first design,
            20261129T212424Z-quick, have none: their c0 is of an overlay filled partly by the writer, then in order);
  r_max     the writer's saturated rate beside the same reader, into a fresh overlay;

and the helper's growth comes from the write pattern alone (models.consolidation.dirty_bytes: the plan's write size,
random fraction and file, the image's cluster size, one L2 table). With b = c0/r_max (the commit gets the device time
the writer leaves) nothing is fitted on a deletion, so every iterative deletion of the run is held out. Tests (each a
models.heldout judgement, model 'consolidation_apart'):

  commit  each iteration's commit time t_k = t0 + D_k / c(r_k), r_k the writer's measured rate during it (the
          first iteration at c0's layout, the later ones at c_helper's);
  growth  what the helper grew to during the iteration: dirty_bytes(r_k · t_k);
  time    each deletion's time, simulated from its first delta and its writer's mean rate (iterations, the stun or
          the commit after the load stopped, as measure.delete_iterative decides);

and each deletion's outcome (converged or not) against the measured one. A prediction's standard error is the delta
method's over the three measured parameters (growth: none, the pattern has no measured parameter); a measurement's is
the repeats' own spread: one commit's time from the idle commits' log spread, one growth from the writer-alone
repeats' log spread about the pattern (their degrees of freedom: repeats − 1). Pure: tables in, tests out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...models import consolidation as cm, heldout as ho
from ...record import RunRecord
from ...values import Value, heldout_values
from .heldout import outcome_words
from .plan import APART, LifecycleParameters, qcow2_config

MODEL = "consolidation_apart"
PREDICTS = {"commit": "each iteration's commit time, from parameters measured apart",
            "growth": "each iteration's helper growth, from the write pattern",
            "time": "each deletion's time, from parameters measured apart"}
L2_ENTRY_BYTES = {False: 8, True: 16}     # a qcow2 L2 entry: standard, extended L2


def apart_table(record: RunRecord) -> pd.DataFrame:
    """One row per apart measurement: repeat, step, seconds (a commit's), committed_bytes, grown_bytes (the
    writer-alone overlay's growth), writer_iops and writes (the writer alone's fio result)."""
    rows = []
    for m in record.measurements:
        info = m.extra.get("apart")
        if m.variant != APART or not info:
            continue
        rows.append({"repeat": int(info["repeat"]), "step": info["step"], "seconds": info.get("seconds", math.nan),
                     "committed_bytes": info.get("committed_bytes", math.nan),
                     "grown_bytes": info.get("grown_bytes", math.nan),
                     "writer_iops": m.iops("write") if info["step"] == "writer_alone" else math.nan,
                     "writes": m.ios("write") if info["step"] == "writer_alone" else math.nan})
    return pd.DataFrame(rows, columns=["repeat", "step", "seconds", "committed_bytes", "grown_bytes", "writer_iops",
                                       "writes"])


def write_pattern(p: LifecycleParameters) -> cm.WritePattern:
    """The writer's pattern as the plan set it: its write size and random fraction over its file (the second file
    region), the overlay's cluster size, and one cluster per L2 table the file's region spans (the first write
    under a table allocates it)."""
    cfg = qcow2_config(p.scale)
    cluster, region = float(cfg.cluster_size), float(p.scale.file_bytes)
    span = cfg.cluster_size // L2_ENTRY_BYTES[cfg.extended_l2] * cfg.cluster_size     # bytes one L2 table maps
    first, last = p.scale.file_bytes, 2 * p.scale.file_bytes - 1
    tables = last // span - first // span + 1
    return cm.WritePattern(float(p.bs), cluster, region, p.random_percent / 100, tables * cluster)


@dataclass(frozen=True)
class Apart:
    """The parameters measured apart, and the measurements' own spreads (log scale, with their degrees of freedom):
    one commit's time (the delta's commits; a helper's: the helper commits', or the delta's in a run without),
    one growth about the pattern (writer-alone repeats)."""

    parameters: cm.ApartParameters
    commit_spread: float
    growth_spread: float
    growth_ratio: cm.Estimate        # measured growth ÷ the pattern's, over the writer-alone repeats
    dof: int
    helper_spread: float = math.nan

    def spread(self, helper: bool) -> float:
        return self.helper_spread if helper and math.isfinite(self.helper_spread) else self.commit_spread


def measured(table: pd.DataFrame, pattern: cm.WritePattern) -> Apart | None:
    """The apart parameters from `table` (apart_table); None without two complete repeats."""
    if table.empty:
        return None
    by = {step: g.set_index("repeat") for step, g in table.groupby("step")}
    delta_step = "delta_commit" if "delta_commit" in by else "idle_commit"     # the first design's name
    if not {"empty_commit", "writer_alone", delta_step} <= set(by):
        return None
    steps = ["empty_commit", "writer_alone", delta_step] + (["helper_commit"] if "helper_commit" in by else [])
    reps = sorted(set.intersection(*(set(by[s].index) for s in steps)))
    if len(reps) < 2:
        return None
    empty, delta, writer = (by[s].loc[reps] for s in ("empty_commit", delta_step, "writer_alone"))
    t0 = empty.seconds.to_numpy(dtype=float)

    def throughput(commits: pd.DataFrame) -> tuple[cm.Estimate, float]:
        """Bytes over the commit's time less the same repeat's fixed cost, and the commits' log spread."""
        t = commits.seconds.to_numpy(dtype=float)
        return (cm.mean_estimate(commits.committed_bytes.to_numpy(dtype=float) / np.maximum(t - t0, 1e-6)),
                float(np.std(np.log(t), ddof=1)))
    c0, spread = throughput(delta)
    c_helper, helper_spread = throughput(by["helper_commit"].loc[reps]) if "helper_commit" in by else (None, math.nan)
    ratio = writer.grown_bytes.to_numpy(dtype=float) / pattern.grown(writer.writes.to_numpy(dtype=float))
    dof = len(reps) - 1
    params = cm.ApartParameters(cm.mean_estimate(t0), c0, cm.mean_estimate(writer.writer_iops.to_numpy(dtype=float)),
                                pattern, dof, c_helper)
    log_ratio = np.log(ratio[ratio > 0])
    return Apart(params, spread, float(np.std(log_ratio, ddof=1)) if len(log_ratio) > 1 else math.nan,
                 cm.mean_estimate(ratio), dof, helper_spread)


@dataclass(frozen=True)
class ApartOutcomes:
    """Per iterative deletion (variant, index): measured converged, predicted converged."""

    rows: tuple[tuple[str, int, bool, bool], ...]

    @property
    def predicted(self) -> int:
        return sum(m == p for _, _, m, p in self.rows)

    def words(self, variant: str) -> str:
        """What happened to `variant`'s deletion and what the parameters measured apart said ('' if none)."""
        return next((outcome_words(m, p) for v, _, m, p in self.rows if v == variant), "")


def _load_s(load: str, p: LifecycleParameters) -> float:
    """How long the load still runs when a deletion starts: its window less the second before the deletion."""
    window = p.scale.grid_window_s if load == "grid" else p.scale.delete_window_s
    return window - 1.0


def apart_tests(ap: Apart, deletions: pd.DataFrame, iterations: pd.DataFrame, p: LifecycleParameters
                ) -> tuple[dict[tuple[str, str], ho.HeldOut], ApartOutcomes]:
    """The three held-out tests (keyed (MODEL, 'commit' | 'growth' | 'time')) and the outcomes of every iterative
    deletion of `deletions` (analyse.deletion_tables), from the parameters measured apart."""
    m = ap.parameters
    points: dict[str, list[ho.PointError]] = {"commit": [], "growth": [], "time": []}
    its = iterations[np.isfinite(iterations.writer_iops)] if not iterations.empty else iterations
    for _, it in its.iterrows():
        label = f"{it.variant}#{int(it['index'])} k{int(it.k)}"
        d, r, t, helper = float(it.delta), float(it.writer_iops), float(it.seconds), int(it.k) > 0
        pred = m.commit_s(d, r, helper)

        def commit(v: cm.ApartValues, d: float = d, r: float = r, helper: bool = helper) -> float:
            return m.commit_s(d, r, helper, v)
        se, dof = m.log_se(commit, pred)
        points["commit"].append(ho.PointError(label, pred if math.isfinite(pred) else math.nan, se, dof, t,
                                              ap.spread(helper), ap.dof))
        # the writes counted in the iteration's window (analyse._writer_writes), not r·t: a load that stops inside
        # an iteration writes only until it stops
        writes = float(it.writes) if "writes" in it and math.isfinite(float(it.writes)) else r * t
        points["growth"].append(ho.PointError(label, float(m.pattern.grown(writes)), 0.0, math.nan,
                                              float(it.grown), ap.growth_spread, ap.dof))
    dels = deletions[deletions.method == "iterative"] if not deletions.empty else deletions
    rows: list[tuple[str, int, bool, bool]] = []
    for _, dl in dels.iterrows():
        if not math.isfinite(float(dl.writer_iops)):
            continue

        def total(v: cm.ApartValues, dl=dl) -> float:
            return m.simulate(float(dl.delta0_mib) * (1 << 20), float(dl.writer_iops), float(p.helper_threshold_bytes),
                              v, max_iterations=int(p.scale.max_iterations), max_stun_s=float(p.max_consolidate_s),
                              load_s=_load_s(str(dl.load), p)).total_s
        sim = m.simulate(float(dl.delta0_mib) * (1 << 20), float(dl.writer_iops), float(p.helper_threshold_bytes),
                         max_iterations=int(p.scale.max_iterations), max_stun_s=float(p.max_consolidate_s),
                         load_s=_load_s(str(dl.load), p))
        se, dof = m.log_se(total, sim.total_s)
        points["time"].append(ho.PointError(f"{dl.variant}#{int(dl['index'])}", sim.total_s, se, dof,
                                            float(dl.seconds), ap.commit_spread, ap.dof))
        rows.append((str(dl.variant), int(dl["index"]), bool(dl.converged), bool(sim.converged)))
    tests = {(MODEL, name): ho.judge(pts, 0, PREDICTS[name], not_tested="no iterative deletion with a writer rate")
             for name, pts in points.items()}
    return tests, ApartOutcomes(tuple(rows))


def apart_values(k: str, ap: Apart, tests: dict[tuple[str, str], ho.HeldOut], outcomes: ApartOutcomes
                 ) -> list[Value]:
    """`<k>.consolidation_apart.*`: the parameters measured apart (t0, c0, r_max, and b = c0/r_max), the growth
    check, the held-out tests and the outcomes (seed 000's two deletions by name)."""
    m, n = ap.parameters, ap.dof + 1
    mib = float(1 << 20)
    head = f"{k}.{MODEL}"
    method = f"mean of {n} repeats, t"
    b = m.c0.value / m.r_max.value if m.r_max.value > 0 else math.nan
    vals = [Value(f"{head}.t0_s", m.t0.value, "s", m.t0.low, m.t0.high, n, 2, method=method),
            Value(f"{head}.c0_mib_s", m.c0.value / mib, "MiB/s", m.c0.low / mib, m.c0.high / mib, n, 1,
                  method=method),
            Value(f"{head}.r_max", m.r_max.value, "writes/s", m.r_max.low, m.r_max.high, n, 0, method=method),
            *([Value(f"{head}.c_helper_mib_s", m.c_helper.value / mib, "MiB/s", m.c_helper.low / mib,
                     m.c_helper.high / mib, n, 2, method=method)] if m.c_helper is not None else []),
            Value(f"{head}.b_kib_per_write", b / 1024, "KiB/s per write/s", n=n, digits=1),
            Value(f"{head}.growth_over_pattern", 100 * ap.growth_ratio.value, "%", 100 * ap.growth_ratio.low,
                  100 * ap.growth_ratio.high, n, 0, method=method),
            Value(f"{head}.repeats", float(n), "repeats")]
    vals += [v for (model, test), h in sorted(tests.items()) for v in heldout_values(f"{k}.{model}.heldout.{test}", h)]
    vals += [Value(f"{head}.outcomes_predicted", float(outcomes.predicted), "", n=len(outcomes.rows)),
             Value(f"{head}.outcomes_tested", float(len(outcomes.rows)), "deletions", n=len(outcomes.rows))]
    vals += [Value(f"{head}.{load}.outcome", text=outcomes.words(f"{load}-iterative") or "not measured")
             for load in ("light", "saturated")]
    return vals


__all__ = ["MODEL", "PREDICTS", "apart_table", "write_pattern", "Apart", "measured", "ApartOutcomes",
           "apart_tests", "apart_values"]
