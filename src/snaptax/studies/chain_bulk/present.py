"""Charts and the TeX table of the chain-bulk study, from its analysis."""
from __future__ import annotations

from pathlib import Path

import altair as alt

from ...paper import figures, macros
from .analyse import BulkAnalysis

SERIES_TITLES = {"read": "512 KiB sequential read", "write": "512 KiB sequential write", "clone": "full clone"}


def ratio_chart(a: BulkAnalysis) -> alt.FacetChart:
    """Each series' rate (IOPS, or clones per second) against chain length, as a ratio to no snapshot, per
    configuration: mean line and 95 % interval band (seed 001, figures 7-9)."""
    data = a.summary.assign(series_title=a.summary.series.map(SERIES_TITLES))
    base = alt.Chart().encode(
        x=alt.X("chain_length:Q", title="snapshots in chain", axis=alt.Axis(tickMinStep=1, format="d")),
        color=alt.Color("variant:N", title="qcow2 configuration"))
    band = base.mark_area(opacity=0.2).encode(y="ratio_low:Q", y2="ratio_high:Q")
    line = base.mark_line(point=True).encode(
        y=alt.Y("ratio:Q", title="rate ÷ no snapshot (1 = no effect)"),
        tooltip=["variant", "series", "chain_length", alt.Tooltip("ratio:Q", format=".2f"), "n"])
    return alt.layer(band, line, data=data).properties(width=170, height=160).facet(
        column=alt.Column("series_title:N", title=None, sort=[SERIES_TITLES[s] for s in ("read", "write", "clone")]))


def fit_tex(a: BulkAnalysis) -> str:
    def ci(est: float, lo: float, hi: float) -> str:
        return f"{macros.fmt(est, 1)} [{macros.fmt(lo, 1)}, {macros.fmt(hi, 1)}]"
    rows = [[macros.tex_escape(r.variant), SERIES_TITLES[r.series],
             f"{macros.fmt(r.tau0 / 1e6, 3)} s" if r.series == "clone" else f"{macros.fmt(r.tau0, 1)} $\\mu$s",
             ci(r.first_pct, r.first_low, r.first_high), ci(r.layer_pct, r.layer_low, r.layer_high),
             macros.fmt(r.r2, 2)] for r in a.fits_table().itertuples()]
    return macros.render_table(["configuration", "series", "$\\tau_0$ per operation", "$\\tau_1/\\tau_0$ (\\%)",
                                "$\\tau_L/\\tau_0$ (\\%)", "$R^2$"], rows, align="llrrrr")


def write(a: BulkAnalysis, figure_dir: Path | None = None, generated_dir: Path | None = None) -> None:
    """The figure and table the paper's section inputs."""
    figures.save(ratio_chart(a), "chain_bulk-ratios", figure_dir)
    macros.write_table("chain_bulk-fit", fit_tex(a), generated_dir)
