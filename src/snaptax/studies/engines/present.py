"""Charts and TeX tables of the engine comparison, from its analysis."""
from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd

from ...paper import figures, macros
from .analyse import EnginesAnalysis
from .plan import FAMILIES

FAMILY_TITLE = "engine (copy mode)"
GRAIN_LABEL = "datum.value >= 1024 ? datum.value / 1024 + ' MiB' : datum.value + ' KiB'"
GRAIN_X = alt.X("grain_kib:Q", scale=alt.Scale(type="log", base=2), title="grain",
                axis=alt.Axis(values=[4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048], labelExpr=GRAIN_LABEL))
# the ratio chart's narrow panels: every fourth octave labelled, as labels side by side ran into each other in print
GRAIN_X_SPARSE = alt.X("grain_kib:Q", scale=alt.Scale(type="log", base=2), title="grain",
                       axis=alt.Axis(values=[4, 64, 1024], labelExpr=GRAIN_LABEL))
RATIO_DOMAIN = (0.0, 1.6)   # intervals from two cycles can be far wider: they are clipped at the plot's edge


def _labelled(a: EnginesAnalysis) -> pd.DataFrame:
    s = a.summary
    return s.assign(label=s.family + " (" + s["mode"] + ")")


def _series(a: EnginesAnalysis) -> tuple[alt.Color, alt.Shape]:
    """Engines that move the same bytes or take the same space sit on one another at a grain (four at 158 MiB at
    64 KiB): each has its own hollow shape as well as its colour (figures.series: one legend for both)."""
    return figures.series("label", FAMILY_TITLE, sorted(_labelled(a).label.unique()))


def cost_chart(a: EnginesAnalysis) -> alt.LayerChart:
    """Host-level bytes per first write versus grain: measured (points, 95 % interval over cycles) and the
    mechanism's prediction without metadata (dashed lines)."""
    color, shape = _series(a)
    base = alt.Chart(_labelled(a)).encode(x=GRAIN_X, color=color)
    y = alt.Y("bytes_per_first_write_kib:Q", scale=alt.Scale(type="log"), title="host KiB per first 4 KiB write")
    pts = figures.hollow_points(base, 60).encode(
        y=y, shape=shape,
        tooltip=["variant", alt.Tooltip("bytes_per_first_write_kib:Q", format=".1f"),
                 alt.Tooltip("model_bytes_per_first_write_kib:Q", format=".1f"), "cycles"])
    bars = base.mark_rule().encode(y="bytes_per_first_write_kib_low:Q", y2="bytes_per_first_write_kib_high:Q")
    line = base.mark_line(strokeDash=[4, 3]).encode(y="model_bytes_per_first_write_kib:Q")
    return (line + bars + pts).properties(title="Bytes moved per first write (points: measured; dashed: mechanism)",
                                          width=340, height=230)


RATIO_MEASURES = {"first_ratio": "writes, grains being broken", "steady_ratio": "writes, all grains broken",
                  "snap_read_ratio": "reads, snapshot present"}


def ratio_frame(a: EnginesAnalysis) -> pd.DataFrame:
    """The IOPS ratios in long form: variant, label, grain_kib, measure, ratio, low, high."""
    s = _labelled(a)
    frames = [pd.DataFrame({"variant": s.variant, "label": s.label, "grain_kib": s.grain_kib, "measure": words,
                            "ratio": s[m], "low": s[f"{m}_low"], "high": s[f"{m}_high"]})
              for m, words in RATIO_MEASURES.items()]
    return pd.concat(frames, ignore_index=True)


def ratio_chart(a: EnginesAnalysis) -> alt.FacetChart:
    """Write and read IOPS with a snapshot ÷ without, versus grain, per engine family (95 % intervals, clipped
    at the plot's edge)."""
    color, shape = _series(a)
    base = alt.Chart().encode(x=GRAIN_X_SPARSE, color=color)
    y = alt.Y("ratio:Q", title="IOPS ÷ no snapshot (QD1)", scale=alt.Scale(domain=RATIO_DOMAIN, clamp=True))
    line = base.mark_line().encode(y=y)
    pts = figures.hollow_points(base, 60).encode(
        y=y, shape=shape,
        tooltip=["variant", "measure", alt.Tooltip("ratio:Q", format=".2f"), alt.Tooltip("low:Q", format=".2f"),
                 alt.Tooltip("high:Q", format=".2f")])
    bars = base.mark_rule(opacity=0.5).encode(y="low:Q", y2="high:Q")
    # three panels of 170 px: the row fits the page at a scale that keeps its text legible
    return alt.layer(bars, line, pts, data=ratio_frame(a)).properties(width=170, height=180).facet(
        column=alt.Column("measure:N", title=None, sort=list(RATIO_MEASURES.values())))


def space_chart(a: EnginesAnalysis) -> alt.LayerChart:
    """Snapshot space after the first-write phase (geometric mean over the cycles), versus grain."""
    color, shape = _series(a)
    base = alt.Chart(_labelled(a)).encode(
        x=GRAIN_X, y=alt.Y("space_first_mib:Q", title="snapshot space after k writes (MiB)"), color=color)
    pts = figures.hollow_points(base, 60).encode(
        shape=shape, tooltip=["variant", alt.Tooltip("space_first_mib:Q", format=".1f"),
                              alt.Tooltip("space_steady_mib:Q", format=".1f")])
    return (base.mark_line() + pts).properties(width=340, height=230,
                                              title="Space the snapshot takes after the first-write phase")


def summary_tex(a: EnginesAnalysis) -> str:
    rows = [[macros.tex_escape(r.family), macros.fmt(r.grain_kib), macros.fmt(r.first_fraction, 2),
             macros.fmt(r.first_ratio, 2), macros.fmt(r.steady_ratio, 2), macros.fmt(r.snap_read_ratio, 2),
             macros.fmt(r.bytes_per_first_write_kib, 1), macros.fmt(r.model_bytes_per_first_write_kib, 1),
             macros.fmt(r.space_first_mib, 1)]
            for r in a.summary.itertuples()]
    return macros.render_table(
        ["engine", "grain (KiB)", "$f$", "first", "steady", "read", "KiB/first write", "model", "space (MiB)"],
        rows, align="lrrrrrrrr")


def fit_tex(a: EnginesAnalysis) -> str:
    rows = []
    for fam in [f for f in FAMILIES if f in a.fits]:
        f = a.fits[fam]
        (clo, chi), (mlo, mhi) = f.ci95
        c = ("1 (fixed)" if f.copy_factor_fixed else
             f"{macros.fmt(f.copy_factor, 2)} [{macros.fmt(clo, 2)}, {macros.fmt(chi, 2)}]")
        m = f"{macros.fmt(f.metadata_bytes / 1024, 1)} [{macros.fmt(mlo / 1024, 1)}, {macros.fmt(mhi / 1024, 1)}]"
        rows.append([macros.tex_escape(fam), macros.tex_escape(f.mode), c, m, macros.fmt(f.r2, 3), str(f.points)])
    return macros.render_table(
        ["engine", "copy mode", "$c$ [95\\,\\% CI]", "$M$ (KiB) [95\\,\\% CI]", "$R^2$", "points"], rows,
        align="llrrrr")


def write(a: EnginesAnalysis, figure_dir: Path | None = None, generated_dir: Path | None = None) -> None:
    """The figures and tables the paper's section inputs."""
    figures.save(cost_chart(a), "engines-cost", figure_dir)
    figures.save(ratio_chart(a), "engines-ratio", figure_dir)
    figures.save(space_chart(a), "engines-space", figure_dir)
    macros.write_table("engines-table", summary_tex(a), generated_dir)
    macros.write_table("engines-fit", fit_tex(a), generated_dir)
