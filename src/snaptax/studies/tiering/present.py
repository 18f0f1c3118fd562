"""Charts and TeX tables of the tiering study, from its analysis.

Replicates: the figures and the phases table show the first replicate's timelines (the variants named as the pools,
and the LVM thin contrast measured once beside them; first_replicate), as every run has them; the claims' values
over all replicates are in the claims table and the values the prose quotes."""
from __future__ import annotations

import math
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from ...models import tiering as tm
from ...paper import figures, macros
from .analyse import TieringAnalysis
from .plan import HEAP_BOUND, LVM_THIN, POOLS, SEED_SAS_KEEP_PCT, TIERED, engine_of, lvmthin_variant, pool_of
from .tables import LAYOUT_COLUMNS, SEED

PHASE_ORDER = ["fill", "learn", "initial", "settle", "with", "delete", "after", "relearn", "relearned"]
PHASE_TITLES = {"initial": "initial", "with": "with snapshot", "delete": "during consolidation",
                "after": "after consolidation", "relearned": "after re-learning"}
# LVM thin's snapshot is deleted (lvremove), not consolidated: its 'after' phase in the table
LVM_THIN_PHASE_TITLES = {**PHASE_TITLES, "after": "after deletion"}
# the pools and engines as the paper names them (a reader sees words, not the plan's identifiers)
POOL_WORDS = {"sas_pool": "SAS-only pool", "tier_pool": "tiered pool"}
ENGINE_WORDS = {"qcow2": "qcow2", LVM_THIN: "LVM thin"}
MEASURED, MODEL = "measured", "model at the SSD tier's speed"    # the ratio chart's two kinds of point
MARKS = ("snapshot", "delete_start", "delete_done", "learn_done", "relearn_done", "delete")
LVM_THIN_VARIANTS = tuple(lvmthin_variant(p) for p in POOLS)
SERIES = (*POOLS, *LVM_THIN_VARIANTS)


def first_replicate(a: TieringAnalysis) -> pd.DataFrame:
    """The phases table's rows of the first replicate (every variant of a run of one replicate)."""
    p = a.phases
    return p[p.replicate == 0] if "replicate" in p.columns else p


def variant_words(variant: str) -> str:
    """A variant (pool, or LVM thin on a pool) in words: 'tiered pool, LVM thin'."""
    pool, engine = pool_of(variant), engine_of(variant)
    return f"{POOL_WORDS.get(pool, pool)}, {ENGINE_WORDS.get(engine, engine)}"


def timeline_chart(a: TieringAnalysis, variants: tuple[str, ...] = POOLS) -> alt.VConcatChart:
    """Seed 002's vCenter graphs, per variant (pool, or LVM thin on a pool): the VM's IOPS per second (fio's log, log
    scale) coloured by phase, and the share of the pool's I/O served by SSD extents (the pool's counters); rules mark
    the snapshot and the consolidation's start and end (LVM thin: the snapshot and its lvremove)."""
    s = a.seconds[a.seconds.phase != "fill"].copy()
    s["ssd_pct"] = 100 * s.ssd_share
    ev = a.events[a.events.event.isin(MARKS)]
    rows = []
    for pool in [p for p in variants if p in set(s.pool)]:
        d = s[s.pool == pool]
        x = alt.X("t_s:Q", title="time (s)")
        color = alt.Color("phase:N", sort=PHASE_ORDER, title="phase")
        iops = alt.Chart(d).mark_point(size=12, filled=True).encode(
            x=x, y=alt.Y("iops:Q", title="VM IO/s", scale=alt.Scale(type="log")), color=color,
            tooltip=["phase", alt.Tooltip("t_s:Q", format=".0f"), alt.Tooltip("iops:Q", format=".0f")])
        rules = alt.Chart(ev[ev.pool == pool]).mark_rule(strokeDash=[3, 3], color="gray").encode(
            x="t_s:Q", tooltip=["event", alt.Tooltip("t_s:Q", format=".1f")])
        share = alt.Chart(d).mark_line(interpolate="step-after", color="black").encode(
            x=x, y=alt.Y("ssd_pct:Q", title="SSD-served %", scale=alt.Scale(domain=[0, 100])))
        rows.append(alt.vconcat(alt.layer(iops, rules).properties(width=420, height=120, title=variant_words(pool)),
                                alt.layer(share, rules).properties(width=420, height=50)))
    return alt.vconcat(*rows)


def ratio_chart(a: TieringAnalysis) -> alt.LayerChart | alt.FacetChart:
    """IOPS of each phase as a % of the initial phase, ours (point, 95 % interval) and the seed's (tick, beside the
    qcow2 points), per pool and engine (colour); for the tiered pool also the misplacement model's ratio at the SSD
    tier's own speed (misplacement.at_tier_speed), a model value, told from the measured ones by its shape (legend:
    MEASURED, MODEL)."""
    first = first_replicate(a)
    p = first[first.phase.isin(list(PHASE_TITLES)[1:])].copy().assign(kind=MEASURED)
    variants = [v for v in SERIES if v in set(p.pool)]
    p["series"] = p.pool
    if not a.at_tier_speed.empty:
        sp = a.at_tier_speed[a.at_tier_speed.phase.isin(list(PHASE_TITLES)[1:])]
        model = sp.assign(series=sp.pool + " " + MODEL, kind=MODEL, seed_ratio_pct=math.nan)
        p = pd.concat([p, model], ignore_index=True)
    series = [s for v in variants for s in (v, f"{v} {MODEL}") if s in set(p.series)]
    p["variant"] = p.pool.map(variant_words)
    p["phase_title"] = p.phase.map(PHASE_TITLES)
    order = [PHASE_TITLES[k] for k in list(PHASE_TITLES)[1:]]
    x = alt.X("phase_title:N", title=None, sort=order, axis=alt.Axis(labelAngle=0))
    xo = alt.XOffset("series:N", sort=series)
    y = alt.Y("ratio_pct:Q", title="IOPS, % of initial (log)", scale=alt.Scale(type="log"))
    legend = alt.Legend(labelLimit=0, orient="bottom", columns=2)
    color = alt.Color("variant:N", sort=[variant_words(v) for v in variants], title=None, legend=legend)
    shape = alt.Shape("kind:N", title=None, legend=legend,
                      scale=alt.Scale(domain=[MEASURED, MODEL], range=["circle", "diamond"]))
    tooltip = ["variant", "kind", "phase", alt.Tooltip("ratio_pct:Q", format=".1f"),
               alt.Tooltip("seed_ratio_pct:Q", format=".1f")]
    # points, not bars: a bar on a log scale has no base; measured points filled, the model's open
    points = [alt.Chart(p[p.kind == kind]).mark_point(filled=kind == MEASURED, size=70, strokeWidth=2).encode(
        x=x, xOffset=xo, y=y, color=color, shape=shape, tooltip=tooltip) for kind in (MEASURED, MODEL)
        if (p.kind == kind).any()]
    err = alt.Chart(p).mark_rule().encode(x=x, xOffset=xo, y="ratio_low:Q", y2="ratio_high:Q", color=color)
    # the seed's figures are VMware redo logs': beside the qcow2 points only, as in the phases table
    beside = p[(p.kind == MEASURED) & (p.pool.map(engine_of) == "qcow2")].dropna(subset=["seed_ratio_pct"])
    seed = alt.Chart(beside).mark_tick(color="black", thickness=2, size=14).encode(
        x=x, xOffset=xo, y="seed_ratio_pct:Q")
    return alt.layer(*points, err, seed).properties(width=420, height=190)


def model_chart(a: TieringAnalysis) -> alt.LayerChart | alt.FacetChart:
    """The tiered pool's per-second points (SSD-served share, VM IOPS) by phase, the fitted model's curve, and the
    model with the SSD tier's own τ (what the measured seconds would be at the tier's own speed)."""
    s = a.seconds[(a.seconds.pool == "tier_pool") & a.seconds.phase.isin(
        ["initial", "settle", "with", "delete", "after", "relearned"]) & (a.seconds.t_in_phase_s > 1)].copy()
    s["ssd_pct"] = 100 * s.ssd_share
    x = alt.X("ssd_pct:Q", title="share of I/O served by SSD extents (%)", scale=alt.Scale(domain=[0, 100]))
    y = alt.Y("iops:Q", title="VM IO/s (log)", scale=alt.Scale(type="log"))
    pts = alt.Chart(s).mark_point(size=16).encode(
        x=x, y=y, color=alt.Color("phase:N", sort=PHASE_ORDER, title="measured, by phase"),
        tooltip=["phase", "t_s", "iops", "ssd_pct"])
    layers: list[alt.Chart] = [pts]
    if a.fit is not None:
        grid = np.linspace(0, 1, 101)
        curves = [pd.DataFrame({"ssd_pct": 100 * grid, "iops": a.fit.predict_iops(grid), "curve": "fitted"})]
        tau_s = a.model_us.get("tier_pool", {}).get("ssd_us_per_io")
        if tau_s:
            curves.append(pd.DataFrame({"ssd_pct": 100 * grid, "iops": tm.iops(grid, tau_s, a.fit.tau_hdd_us),
                                        "curve": "SSD tier at its own speed"}))
        layers.append(alt.Chart(pd.concat(curves)).mark_line(color="black").encode(
            x=x, y=y, strokeDash=alt.StrokeDash("curve:N", title="model")))
    return alt.layer(*layers).properties(width=300, height=200)


def variant_label(variant: str) -> str:
    """A variant in the table: its pool and engine, in words."""
    return macros.tex_escape(variant_words(variant))


def phases_tex(a: TieringAnalysis) -> str:
    def ci(r) -> str:
        if r.phase == "initial" or not math.isfinite(r.ratio_pct):
            return "--"
        if not (math.isfinite(r.ratio_low) and math.isfinite(r.ratio_high)):
            return macros.fmt(r.ratio_pct, 1)
        return f"{macros.fmt(r.ratio_pct, 1)} [{macros.fmt(r.ratio_low, 1)}, {macros.fmt(r.ratio_high, 1)}]"
    speed = {(r.pool, r.phase): r for r in a.at_tier_speed.itertuples()}

    def at_speed(r) -> str:
        m = speed.get((r.pool, r.phase))
        return ci(m._replace(phase=r.phase)) if pool_of(r.pool) == TIERED and m is not None else "--"
    def seed(r) -> tuple[str, str]:
        # the seed's figures are VMware redo logs': shown beside the qcow2 rows only
        if engine_of(r.pool) != "qcow2":
            return "--", "--"
        return (macros.fmt(r.seed_iops, 0) if math.isfinite(r.seed_iops) else "--",
                macros.fmt(r.seed_ratio_pct, 1) if math.isfinite(r.seed_ratio_pct) and r.phase != "initial" else "--")
    def phase(r) -> str:
        titles = LVM_THIN_PHASE_TITLES if engine_of(r.pool) == LVM_THIN else PHASE_TITLES
        return titles.get(r.phase, r.phase)
    rows = [[variant_label(r.pool), phase(r), macros.fmt(r.iops, 0), ci(r), at_speed(r),
             macros.fmt(100 * r.ssd_share, 0) if math.isfinite(r.ssd_share) else "--", *seed(r)]
            for r in first_replicate(a).itertuples()]
    return macros.render_table(["pool, engine", "phase", "IO/s", "measured: \\% of initial [95\\% CI]",
                                "model: at SSD speed \\%", "SSD-served \\%", "seed IO/s", "seed \\%"], rows,
                               align="llrrrrrr")


def what_if_chart(a: TieringAnalysis) -> alt.HConcatChart:
    """The what-ifs as curves (misplacement.what_if_curves): how long the loss lasts against the tiering cycle (log-log;
    the seed's era's 24 h, 1 h and 5 min marked), and the rate with a snapshot against the SSD-served share with it
    at the SSD tier's speed (band: τ_hdd's 95 % interval), with the shares measured with the snapshot (qcow2, LVM
    thin), the flash write cache's share and the seed's ratio (rule) marked."""
    c = a.what_if_curves
    loss = c[c.curve == "loss_hours"].assign(hours=lambda d: d.x / 3600)
    named = a.what_if[a.what_if.what.str.startswith("cycle")] if not a.what_if.empty else a.what_if
    marks = pd.DataFrame({"hours": named.cycle_s / 3600, "y": named.loss_hours, "what": named.what}) \
        if not named.empty else pd.DataFrame(columns=["hours", "y", "what"])
    xs = alt.X("hours:Q", title="tiering cycle (h, log)", scale=alt.Scale(type="log"))
    ys = alt.Y("y:Q", title="loss lasts (h, log)", scale=alt.Scale(type="log"))
    left = alt.layer(alt.Chart(loss).mark_line(color="black").encode(x=xs, y=ys),
                     alt.Chart(marks).mark_point(filled=True, size=50, color="black").encode(
                         x=xs, y=ys, tooltip=["what", alt.Tooltip("y:Q", format=".2f")])
                     ).properties(width=220, height=170, title="seed's 100 GB disk, 12 GB per 5 min")
    ratio = c[c.curve == "ratio_pct"].assign(ssd_pct=lambda d: 100 * d.x)
    x = alt.X("ssd_pct:Q", title="SSD-served share with the snapshot (%)", scale=alt.Scale(domain=[0, 100]))
    y = alt.Y("y:Q", title="% of initial rate (log)", scale=alt.Scale(type="log"))
    layers: list[alt.Chart] = [alt.Chart(ratio).mark_area(opacity=0.25, color="gray").encode(x=x, y="low:Q",
                                                                                          y2="high:Q"),
                               alt.Chart(ratio).mark_line(color="black").encode(x=x, y=y)]
    points = []
    first = first_replicate(a)
    for r in first[(first.phase == "with") & (first.pool.map(pool_of) == TIERED)].itertuples():
        points.append({"ssd_pct": 100 * r.ssd_share, "label": f"share measured, {ENGINE_WORDS[engine_of(r.pool)]}"})
    cache = a.what_if[a.what_if.what == "flash write cache"] if not a.what_if.empty else a.what_if
    if len(cache):
        points.append({"ssd_pct": 100 * float(cache.ssd_share.iloc[0]), "label": "flash write cache"})
    if points and len(ratio):
        pts = pd.DataFrame(points)
        pts["y"] = np.interp(pts.ssd_pct, ratio.ssd_pct, ratio.y)
        layers.append(alt.Chart(pts).mark_point(filled=True, size=60).encode(
            x=x, y=y, shape=alt.Shape("label:N", title=None, legend=alt.Legend(labelLimit=0)),
            tooltip=["label", alt.Tooltip("y:Q", format=".1f")]))
    seed = 100 * SEED[TIERED]["with"] / SEED[TIERED]["initial"]
    layers.append(alt.Chart(pd.DataFrame({"y": [seed]})).mark_rule(strokeDash=[4, 3], color="gray").encode(y="y:Q"))
    right = alt.layer(*layers).properties(width=220, height=170, title="tiered pool: model at the SSD tier's speed")
    return alt.hconcat(left, right)


def sweep_chart(a: TieringAnalysis) -> alt.LayerChart | alt.FacetChart:
    """The SAS-only pool's coverage sweep (coverage.py): the share of its initial rate the pool kept with a snapshot
    against the share of the redo log's L2 tables cached (log), mean over the sweeps with its 95 % interval, the
    seed's 12.2 % (dashed rule) and the seed system's bound on the cached share (dotted rule). Empty for a run without
    a sweep (quick)."""
    d = a.sweep.drop(columns=["estimate"], errors="ignore").assign(pct=lambda t: 100 * t.realised) \
        if not a.sweep.empty else pd.DataFrame({c: pd.Series(dtype=float)       # typed: altair infers no type
                                                 for c in ("pct", "keep_pct", "keep_low", "keep_high", "n")})
    x = alt.X("pct:Q", title="L2 tables cached (%, log)", scale=alt.Scale(type="log"))
    y = alt.Y("keep_pct:Q", title="kept with a snapshot (% of initial)", scale=alt.Scale(domain=[0, 100]))
    return alt.layer(
        alt.Chart(d).mark_rule(color="black").encode(x=x, y="keep_low:Q", y2="keep_high:Q"),
        alt.Chart(d).mark_line(point=True, color="black").encode(
            x=x, y=y, tooltip=[alt.Tooltip("pct:Q", format=".1f"), alt.Tooltip("keep_pct:Q", format=".1f"), "n:Q"]),
        alt.Chart(pd.DataFrame({"keep_pct": [SEED_SAS_KEEP_PCT]})).mark_rule(strokeDash=[4, 3], color="gray")
        .encode(y="keep_pct:Q"),
        alt.Chart(pd.DataFrame({"pct": [100 * HEAP_BOUND]})).mark_rule(strokeDash=[1, 2], color="gray")
        .encode(x="pct:Q"),
    ).properties(width=300, height=200, title="SAS-only pool: redo log's cache against what it keeps")


def engines_table(a: TieringAnalysis) -> pd.DataFrame:
    """qcow2 against LVM thin per pool and phase: the SSD-served share, the measured ratio to the initial phase and,
    on the tiered pool, the ratio at the SSD tier's speed."""
    first = first_replicate(a)
    if first.empty:
        return pd.DataFrame(columns=["pool", "engine", "phase", "ssd_pct", "ratio_pct", "at_tier_speed_pct"])
    p = first.assign(engine=first.pool.map(engine_of))
    speed = {(r.pool, r.phase): r.ratio_pct for r in a.at_tier_speed.itertuples()}
    p["at_tier_speed_pct"] = [speed.get((r.pool, r.phase), 100.0 if r.phase == "initial" and pool_of(r.pool) == TIERED
                                        else math.nan) for r in p.itertuples()]
    p["ssd_pct"] = 100 * p.ssd_share
    p["pool"] = p.pool.map(pool_of)
    order = {ph: i for i, ph in enumerate(PHASE_ORDER)}
    p = p.sort_values(["pool", "phase"], key=lambda c: c.map(order) if c.name == "phase" else c, kind="stable")
    return p[["pool", "engine", "phase", "ssd_pct", "ratio_pct", "at_tier_speed_pct"]].reset_index(drop=True)


def layout_table(a: TieringAnalysis) -> pd.DataFrame:
    """LVM thin on the untiered pool, per steady phase: the guest's IOPS and what the array saw (device commands per
    guest command, the array's ms per command and mean queue, the members' ms per command, busiest over least busy
    member, cache-hit share) and the guest's CPU use — where the loss after lvremove is, and is not."""
    variant = lvmthin_variant(next(p for p in POOLS if p != TIERED))
    m = a.meas[(a.meas.pool == variant) & a.meas.phase.isin(("initial", "settle", "with", "after"))] \
        if not a.meas.empty else a.meas
    if m.empty:
        return pd.DataFrame(columns=["phase", "iops", *LAYOUT_COLUMNS])
    return m[["phase", "iops", *LAYOUT_COLUMNS]].reset_index(drop=True)


def what_if_table(a: TieringAnalysis) -> pd.DataFrame:
    return a.what_if


def write(a: TieringAnalysis, figure_dir: Path | None = None, generated_dir: Path | None = None) -> None:
    figures.save(timeline_chart(a), "tiering-timeline", figure_dir)
    figures.save(timeline_chart(a, LVM_THIN_VARIANTS), "tiering-lvmthin-timeline", figure_dir)
    figures.save(ratio_chart(a), "tiering-ratios", figure_dir)
    figures.save(model_chart(a), "tiering-model", figure_dir)
    figures.save(what_if_chart(a), "tiering-whatif", figure_dir)
    figures.save(sweep_chart(a), "tiering-sweep", figure_dir)
    macros.write_table("tiering-phases", phases_tex(a), generated_dir)
