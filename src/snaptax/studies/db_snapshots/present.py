"""Charts and TeX tables of the database-snapshot study, from its analysis."""
from __future__ import annotations

import math
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from ...paper import figures, macros
from .analyse import TIME_KEYS, DbSnapshotAnalysis, _per_page
from .plan import SNAPSHOT_DEVICES

TIME_TITLES = {"source_write_s": "source write", "copy_read_s": "copy read (old page)",
               "copy_write_s": "copy write (snapshot files)", "commit_s": "commit (flush + map)"}


def duration_chart(a: DbSnapshotAnalysis) -> alt.LayerChart | alt.FacetChart:
    """Seed 004's Figure 1: the SELECT INTO's duration with 0, 1, 2 snapshots per snapshot device, every run (dots)
    and their geometric mean with its 95 % interval (tick and rule; stats.geometric_mean_interval). On a log axis:
    the durations span more than a decade (about half a second without a snapshot, many seconds with two on the
    RAID5), which a linear axis flattens near zero; a geometric mean is a tick, as a bar has no length there."""
    runs, s = a.runs.copy(), a.summary.copy()
    x = alt.X("k:O", title="database snapshots", axis=alt.Axis(labelAngle=0))
    xo = alt.XOffset("device:N", sort=list(SNAPSHOT_DEVICES))
    color = alt.Color("device:N", sort=list(SNAPSHOT_DEVICES), title="snapshot files on")
    # the data's range, not the decades around it (a nice log domain left half the plot empty)
    y = alt.Y("duration_s:Q", title="duration (s, log scale)", scale=alt.Scale(type="log", nice=False, padding=8))
    means = alt.Chart(s).mark_tick(thickness=2).encode(x=x, xOffset=xo, y=y, color=color)
    err = alt.Chart(s).mark_rule().encode(x=x, xOffset=xo, y="duration_low:Q", y2="duration_high:Q", color=color)
    dots = alt.Chart(runs).mark_point(size=14, filled=True, opacity=0.8).encode(
        x=x, xOffset=xo, y=y, color=color, tooltip=["device", "k", "repeat", alt.Tooltip("duration_s:Q", format=".3f")])
    return alt.layer(means, err, dots).properties(width=300, height=180)


def time_split_chart(a: DbSnapshotAnalysis) -> alt.Chart:
    """Where the engine's time went, per first-written page (thread-µs summed over the request threads; the
    analogue of the seed's Figure 2 wait statistics), per device and snapshot count."""
    s = a.summary[a.summary.k > 0]
    rows = [{"device": r.device, "k": int(r.k), "where": TIME_TITLES[t], "us_per_page": float(getattr(r, _per_page(t)))}
            for r in s.itertuples() for t in TIME_KEYS]
    d = pd.DataFrame(rows, columns=["device", "k", "where", "us_per_page"])
    return alt.Chart(d).mark_bar().encode(
        # four ticks: the default ones' labels ran into each other at the chart's right end
        x=alt.X("us_per_page:Q", title="thread-µs per first-written page", axis=alt.Axis(tickCount=4)),
        y=alt.Y("label:N", title=None, sort=None),
        color=alt.Color("where:N", sort=list(TIME_TITLES.values()), title=None),
        tooltip=["device", "k", "where", alt.Tooltip("us_per_page:Q", format=".1f")],
    ).transform_calculate(label="datum.device + ', k = ' + datum.k").properties(width=300, height=110)


def model_chart(a: DbSnapshotAnalysis) -> alt.LayerChart | alt.FacetChart:
    """Measured durations (geometric means with their 95 % intervals) against the fitted model T(k) = T0 + P·τ(k),
    per device."""
    rows = []
    for device, f in a.fits.items():
        g = a.runs[(a.runs.device == device) & (a.runs.k > 0)]
        pages = float(g.pages_first_written.mean()) if len(g) else math.nan
        for k in np.arange(0, 3):
            rows.append({"device": device, "k": int(k), "model_s": float(f.predict_s(int(k), pages))})
    model = pd.DataFrame(rows, columns=["device", "k", "model_s"])
    # without snapshots both devices time alike (the source is the same): hollow shapes keep both points visible
    # (figures.series: one legend for the colour and the shape)
    color, shape = figures.series("device", "snapshot files on",
                                  [d for d in SNAPSHOT_DEVICES if d in set(a.summary.device)])
    # a count: ticks at 0, 1, 2 only (tickMinStep still gave 0.5 steps in the rendered figure)
    x = alt.X("k:Q", title="database snapshots", scale=alt.Scale(domain=[0, 2]),
              axis=alt.Axis(values=[0, 1, 2], format="d"))
    pts = figures.hollow_points(alt.Chart(a.summary)).encode(
        x=x, y=alt.Y("duration_s:Q", title="duration (s)"), color=color, shape=shape)
    err = alt.Chart(a.summary).mark_rule().encode(x=x, y="duration_low:Q", y2="duration_high:Q", color=color)
    line = alt.Chart(model).mark_line(strokeDash=[4, 3]).encode(x=x, y="model_s:Q", color=color)
    return alt.layer(pts, err, line).properties(width=260, height=170)


def summary_tex(a: DbSnapshotAnalysis) -> str:
    def ci(x: float, lo: float, hi: float, digits: int) -> str:
        if not math.isfinite(x):
            return "--"
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return macros.fmt(x, digits)
        return f"{macros.fmt(x, digits)} [{macros.fmt(lo, digits)}, {macros.fmt(hi, digits)}]"

    def us(r, t: str) -> str:
        v = float(getattr(r, _per_page(t)))
        return macros.fmt(v, 0) if math.isfinite(v) else "--"
    rows = [[macros.tex_escape(r.device), str(int(r.k)), ci(r.duration_s, r.duration_low, r.duration_high, 2),
             f"{macros.fmt(r.min_s, 2)}--{macros.fmt(r.max_s, 2)}",
             ci(r.ratio_pct, r.ratio_low, r.ratio_high, 0) if r.k else "--", *[us(r, t) for t in TIME_KEYS]]
            for r in a.summary.itertuples()]
    return macros.render_table(["snapshots on", "$k$", "duration s [95\\% CI]", "min--max", "\\% of $k{=}0$",
                                "src.\\ write", "copy read", "copy write", "commit"], rows, align="lrrrrrrrr")


def write(a: DbSnapshotAnalysis, figure_dir: Path | None = None, generated_dir: Path | None = None) -> None:
    figures.save(duration_chart(a), "db_snapshots-duration", figure_dir)
    figures.save(time_split_chart(a), "db_snapshots-time", figure_dir)
    figures.save(model_chart(a), "db_snapshots-model", figure_dir)
    macros.write_table("db_snapshots-summary", summary_tex(a), generated_dir)
