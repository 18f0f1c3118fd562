"""Charts and TeX tables of the lifecycle study, from its analysis."""
from __future__ import annotations

import math
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from ...paper import figures, macros
from .analyse import LifecycleAnalysis
from .plan import LifecycleParameters

MiB = 1 << 20
SERIES = alt.Color("series:N", title=None, sort=["VM read", "VM write", "host read", "host write"])
MARKS = ("snapshot", "delete_start", "stun", "not_converged", "load_stopped", "delete_done")


def timeline_chart(a: LifecycleAnalysis, load: str) -> alt.VConcatChart:
    """Seed 000's graphs 1-3 for one load level: VM-level (fio logs via fiologparser) and host-level (the array's
    counters) reads and writes per second over the timeline, one panel per deletion method; rules mark the
    snapshot, the start and end of the deletion, the stun, and where the load stopped."""
    t = a.timeline[a.timeline.variant.str.startswith(f"{load}-")].copy()
    t["series"] = t.level + " " + t.direction
    t["method"] = t.variant.str.split("-", n=1).str[1]
    ev = a.events[a.events.variant.str.startswith(f"{load}-") & a.events.event.isin(MARKS)].copy()
    ev["method"] = ev.variant.str.split("-", n=1).str[1]
    charts = []
    for method in sorted(t.method.unique()):
        lines = alt.Chart(t[t.method == method]).mark_line(interpolate="step-after").encode(
            x=alt.X("t_s:Q", title="time (s)"), y=alt.Y("iops:Q", title="IO/s"), color=SERIES,
            tooltip=["series", alt.Tooltip("t_s:Q", format=".0f"), alt.Tooltip("iops:Q", format=".0f")])
        rules = alt.Chart(ev[ev.method == method]).mark_rule(strokeDash=[3, 3], color="gray").encode(
            x="t_s:Q", tooltip=["event", alt.Tooltip("t_s:Q", format=".1f")])
        charts.append(alt.layer(lines, rules).properties(width=560, height=130, title=f"{load}: {method} deletion"))
    return alt.vconcat(*charts)


def deletion_chart(a: LifecycleAnalysis) -> alt.Chart:
    """Deletion time per method and load: under load (bar) and after the load stopped (stacked)."""
    d = a.deletions[a.deletions.load.isin(["light", "saturated"])].copy()
    d["under load"] = d.seconds - d.after_load_s
    d["after the load stopped"] = d.after_load_s
    long = d.melt(id_vars=["load", "method", "converged"], value_vars=["under load", "after the load stopped"],
                  var_name="part", value_name="s")
    return alt.Chart(long).mark_bar().encode(
        x=alt.X("method:N", title=None), y=alt.Y("s:Q", title="deletion time (s)"),
        color=alt.Color("part:N", title=None), column=alt.Column("load:N", title=None),
        tooltip=["load", "method", "part", alt.Tooltip("s:Q", format=".1f"), "converged"]).properties(
        width=180, height=180, title="Deleting a snapshot under load (three methods)")


def model_frame(a: LifecycleAnalysis) -> pd.DataFrame:
    """The fitted model's deletion time and iterations against the writer's rate (dense), for the grid's D0."""
    if a.fit is None or a.deletions.empty:
        return pd.DataFrame()
    p = a.record.parameters(LifecycleParameters)
    d0 = float(a.deletions.delta0_mib.max()) * MiB
    top = max(float(np.nanmax(a.deletions.writer_iops)) * 1.2, a.fit.critical_rate * 1.3)
    rows = []
    for r in np.linspace(0, top, 80):
        tr = a.fit.simulate(d0, float(r), float(p.helper_threshold_bytes), max_iterations=int(p.scale.max_iterations),
                            max_stun_s=float(p.max_consolidate_s))
        rows.append({"writer_iops": r, "seconds": tr.total_s if tr.converged else math.nan,
                     "iterations": tr.iterations, "converged": tr.converged})
    return pd.DataFrame(rows)


def model_chart(a: LifecycleAnalysis) -> alt.HConcatChart:
    """Measured iterative deletions (points; filled: converged) against the model's prediction (line) versus the
    guest's write rate; the dashed rule is the critical rate r* = c0/(a + b)."""
    m = model_frame(a)
    d = a.predictions.copy()
    if m.empty or d.empty:
        return alt.hconcat()
    d["outcome"] = np.where(d.converged, "converged", "did not converge")
    rstar = pd.DataFrame({"r": [a.fit.critical_rate if a.fit else math.nan]})
    x = alt.X("writer_iops:Q", title="guest writes/s during the deletion")
    left = alt.layer(
        alt.Chart(m).mark_line().encode(x=x, y=alt.Y("seconds:Q", title="deletion time under load (s)")),
        alt.Chart(d).mark_point(size=60).encode(x=x, y="seconds:Q", shape=alt.Shape("outcome:N", title=None),
                                                tooltip=["variant", "seconds", "predicted_seconds", "outcome"]),
        alt.Chart(rstar).mark_rule(strokeDash=[4, 3]).encode(x="r:Q")).properties(width=260, height=200)
    right = alt.layer(
        alt.Chart(m).mark_line().encode(x=x, y=alt.Y("iterations:Q", title="iterations")),
        alt.Chart(d).mark_point(size=60).encode(x=x, y="iterations:Q", shape="outcome:N",
                                                tooltip=["variant", "iterations", "predicted_iterations"]),
        alt.Chart(rstar).mark_rule(strokeDash=[4, 3]).encode(x="r:Q")).properties(width=260, height=200)
    return alt.hconcat(left, right).properties(title="Consolidation convergence: model (line) and measured")


def phases_table(a: LifecycleAnalysis) -> pd.DataFrame:
    """Mean VM and host IOPS per load and phase over the timelines."""
    cols = ["vm_read_iops", "vm_write_iops", "host_read_iops", "host_write_iops", "write_clat_ms"]
    m = a.meas[a.meas.load.isin(["light", "saturated"])]
    return m.groupby(["load", "phase"], sort=False)[cols].mean().round(1).reset_index()


def deletions_tex(a: LifecycleAnalysis) -> str:
    rows = []
    for _, r in a.deletions[a.deletions.load.isin(["light", "saturated"])].iterrows():
        rows.append([macros.tex_escape(r.load), macros.tex_escape(r.method), "yes" if r.converged else "no",
                     macros.fmt(r.seconds, 1), macros.fmt(r.after_load_s, 1),
                     str(int(r.iterations)) if r.method == "iterative" else "--",
                     macros.fmt(r.stun_s, 2) if r.method == "iterative" and r.converged else "--",
                     macros.fmt(r.writer_iops, 0)])
    return macros.render_table(["load", "method", "converged under load", "time (s)", "after load stop (s)",
                                "iterations", "stun (s)", "guest W/s"], rows, align="llcrrrrr")


def write(a: LifecycleAnalysis, figure_dir: Path | None = None, generated_dir: Path | None = None) -> None:
    figures.save(timeline_chart(a, "light"), "lifecycle-timeline-light", figure_dir)
    figures.save(timeline_chart(a, "saturated"), "lifecycle-timeline-saturated", figure_dir)
    figures.save(deletion_chart(a), "lifecycle-deletion-times", figure_dir)   # the table is lifecycle-deletions
    if a.fit is not None:
        figures.save(model_chart(a), "lifecycle-model", figure_dir)
    macros.write_table("lifecycle-deletions", deletions_tex(a), generated_dir)


def model_table(a: LifecycleAnalysis) -> pd.DataFrame:
    """The fitted consolidation model: each parameter with its 95 % interval, and the critical write rate."""
    f = a.fit
    if f is None:
        return pd.DataFrame()
    rows = [("t0 (s)", f.t0.value, f.t0.low, f.t0.high), ("c0 (MiB/s)", f.c0.value / MiB, f.c0.low / MiB,
                                                          f.c0.high / MiB),
            ("b (KiB/s per write/s)", f.b.value / 1024, f.b.low / 1024, f.b.high / 1024),
            ("a (KiB per write)", f.a.value / 1024, f.a.low / 1024, f.a.high / 1024)]
    lo, hi = f.critical_rate_interval()
    rows.append(("r* = c0/(a+b) (writes/s)", f.critical_rate, lo, hi))
    return pd.DataFrame(rows, columns=["parameter", "estimate", "low", "high"])


def apart_table(a: LifecycleAnalysis) -> pd.DataFrame:
    """The consolidation model with its parameters measured apart (lifecycle.apart): t0, c0 and r_max with their
    95 % intervals over the repeats, the growth measured against the write pattern's, and each held-out test's
    verdict with its worst error (%). Empty for a run measured before the apart variant existed."""
    ap = a.apart
    if ap is None:
        return pd.DataFrame(columns=["quantity", "estimate", "low", "high", "verdict"])
    m = ap.parameters
    rows: list[tuple[str, float, float, float, str]] = [
        ("t0 (s)", m.t0.value, m.t0.low, m.t0.high, ""),
        ("c0 (MiB/s)", m.c0.value / MiB, m.c0.low / MiB, m.c0.high / MiB, ""),
        ("r_max (writes/s)", m.r_max.value, m.r_max.low, m.r_max.high, ""),
        *([("c_helper (MiB/s)", m.c_helper.value / MiB, m.c_helper.low / MiB, m.c_helper.high / MiB, "")]
          if m.c_helper is not None else []),
        ("growth / pattern (%)", 100 * ap.growth_ratio.value, 100 * ap.growth_ratio.low, 100 * ap.growth_ratio.high,
         "")]
    for (model, test), h in sorted(a.heldout.items()):
        if model != "consolidation_apart":
            continue
        w = h.worst
        lo, hi = w.interval() if w else (math.nan, math.nan)
        rows.append((f"held out: {test}, worst error (%)", w.error_pct if w else math.nan,
                     100 * math.expm1(lo) if math.isfinite(lo) else math.nan,
                     100 * math.expm1(hi) if math.isfinite(hi) else math.nan, h.verdict))
    if a.apart_outcomes is not None:
        o = a.apart_outcomes
        rows.append(("outcomes predicted", float(o.predicted), math.nan, math.nan, f"of {len(o.rows)}"))
    return pd.DataFrame(rows, columns=["quantity", "estimate", "low", "high", "verdict"])
