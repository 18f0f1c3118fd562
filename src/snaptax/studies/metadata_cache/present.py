"""Charts and the TeX table of the metadata-cache study, from its analysis."""
from __future__ import annotations

from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from ...models import metadata_cache as mc
from ...paper import figures, macros
from .analyse import MetadataCacheAnalysis


def loss_chart(a: MetadataCacheAnalysis) -> alt.LayerChart:
    """Loss with one snapshot (%) against the fraction of the L2 tables cached: measured per coverage (points, 95 %
    interval over the pairs) and the fitted models put together (line), with the coverages they imply for seed
    001's 65 % and 35 % (crosses)."""
    assert a.misses and a.cost
    c = np.linspace(float(a.summary.coverage.min()), 1.0, 200)
    curve = pd.DataFrame({"coverage": c, "loss_pct": 100 * a.cost.predict_loss(
        mc.metadata_reads_per_io(c, a.misses.mu))})
    x = alt.X("coverage:Q", title="fraction of the L2 tables in the cache", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("loss_pct:Q", title="loss with one snapshot (%)", scale=alt.Scale(domain=[-10, 100]))
    pts = alt.Chart(a.summary).mark_point(filled=True, size=60).encode(
        x=x, y=y, tooltip=["variant", alt.Tooltip("loss_pct:Q", format=".1f"), alt.Tooltip("m:Q", format=".3f"),
                           "pairs"])
    bars = alt.Chart(a.summary).mark_rule().encode(x=x, y="loss_pct_low:Q", y2="loss_pct_high:Q")
    line = alt.Chart(curve).mark_line(strokeDash=[4, 3]).encode(x=x, y=y)
    implied = a.implied.assign(loss_pct=a.implied.published_loss_pct)
    # Okabe-Ito's vermilion: apart from the measured points' blue with every colour-vision deficiency
    marks = alt.Chart(implied).mark_point(shape="cross", size=120, color=figures.VERMILION).encode(
        x=x, y=y, tooltip=["stand_for", alt.Tooltip("coverage:Q", format=".3f"), "published_loss_pct"])
    return (bars + pts + line + marks).properties(width=360, height=240)


def cost_chart(a: MetadataCacheAnalysis) -> alt.LayerChart:
    """Slowdown (IOPS with no snapshot ÷ with one) of every pair against its metadata reads per guest I/O, and the
    fitted cost model 1 + λ0 + κ·m^α."""
    assert a.cost
    m = np.linspace(0.0, float(a.pairs.m.max()), 200)
    curve = pd.DataFrame({"m": m, "slowdown": a.cost.predict_slowdown(m)})
    x = alt.X("m:Q", title="metadata reads per guest I/O")
    y = alt.Y("slowdown:Q", title="IOPS no snapshot ÷ one snapshot")
    pts = alt.Chart(a.pairs).mark_point(filled=True).encode(
        x=x, y=y, color=alt.Color("coverage:O", title="coverage"),
        tooltip=["variant", "repeat", alt.Tooltip("slowdown:Q", format=".2f")])
    line = alt.Chart(curve).mark_line(strokeDash=[4, 3], color="black").encode(x=x, y=y)
    return (pts + line).properties(width=360, height=240)


# fits_table's plain-text names (the notebook's) as the paper's mathematics: the models and their parameters
MISS_MODEL_TEX = "misses: $m = \\mu\\,(1 - c)$"
COST_MODEL_TEX = "cost: slowdown $= 1 + \\lambda_0 + \\kappa\\, m^\\alpha$"
PARAMETER_TEX = {"mu (reads per miss)": "$\\mu$ (reads per miss)", "lambda0": "$\\lambda_0$", "kappa": "$\\kappa$",
                 "alpha": "$\\alpha$"}


def fit_tex(a: MetadataCacheAnalysis) -> str:
    """The two models' parameters with their 95 % intervals, named in the paper's symbols."""
    t = a.fits_table()
    rows = [[MISS_MODEL_TEX if r.model.startswith("misses") else COST_MODEL_TEX,
             PARAMETER_TEX.get(r.parameter, macros.tex_escape(r.parameter)), macros.fmt(float(r.value), 3),
             macros.tex_escape(r.ci95), str(r.points)] for r in t.itertuples(index=False)]
    return macros.render_table(["model", "parameter", "estimate", "95\\,\\% interval", "points"], rows,
                               align="llrrr")


def write(a: MetadataCacheAnalysis, figure_dir: Path | None = None, generated_dir: Path | None = None) -> None:
    """The figures and the table the paper's section inputs."""
    figures.save(loss_chart(a), "metadata_cache-loss", figure_dir)
    figures.save(cost_chart(a), "metadata_cache-cost", figure_dir)
    macros.write_table("metadata_cache-fit", fit_tex(a), generated_dir)
