"""Charts and TeX tables of the chain-length study, from its analysis."""
from __future__ import annotations

from pathlib import Path

import altair as alt

from ...models.chain import ChainFit
from ...paper import figures, macros
from .analyse import ENGINE_WORDS, JOB_WORDS, PUBLISHED_LOSS, STAND_IN, ChainAnalysis
from .plan import LVM_THIN, MIRROR

# Configurations with one baseline (both qcow2 stand-ins without a snapshot) and phases at the same chain length sit
# on one another: each series also has its own hollow shape (figures.hollow_points), so a point under another shows.
JOB_TITLES = {"randrw": "random 4 KiB (randrw)", "readwrite": "sequential 4 KiB (readwrite)",
              MIRROR: "16 KiB, 50 % random (mirror)"}


def chain_chart(a: ChainAnalysis, job: str, phase: str = "create") -> alt.LayerChart:
    """IOPS versus chain length per configuration: geometric mean of the repeats as a line, its 95 % interval as a
    band (seed 001, figures 1/2). On a log axis: LVM thin runs at about a tenth of qcow2's IOPS, which a linear axis
    flattens near zero (issue 50), and a log axis shows equal ratios as equal distances."""
    data = a.summary[(a.summary.job == job) & (a.summary.phase == phase)]
    # every configuration of the run in both panels: one colour and shape per configuration across the figure
    color, shape = figures.series("variant", "configuration", sorted(a.summary.variant.unique()))
    base = alt.Chart(data).encode(
        x=alt.X("chain_length:Q", title="snapshots in chain", axis=alt.Axis(tickMinStep=1, format="d")),
        color=color)
    y_scale = alt.Scale(type="log")
    band = base.mark_area(opacity=0.2).encode(y=alt.Y("iops_low:Q", scale=y_scale), y2="iops_high:Q")
    y = alt.Y("iops:Q", title="IOPS (read + write, log scale)", scale=y_scale)
    line = base.mark_line().encode(y=y)
    pts = figures.hollow_points(base).encode(
        y=y, shape=shape,
        tooltip=["variant", "chain_length", alt.Tooltip("iops:Q", format=".0f"),
                 alt.Tooltip("ratio:Q", format=".2f", title="÷ no snapshot"), "n"])
    # 240 px wide, two side by side: the pair fits the page at a scale that keeps its text legible
    return (band + line + pts).properties(title=JOB_TITLES.get(job, job), width=240, height=200)


def chains_chart(a: ChainAnalysis) -> alt.HConcatChart | alt.ConcatChart:
    """Seed 001's figures 1 and 2 side by side: the random and the sequential job (chain_chart each)."""
    return chain_chart(a, "randrw") | chain_chart(a, "readwrite")


def mirror_chart(a: ChainAnalysis, job: str = MIRROR) -> alt.FacetChart:
    """Create versus delete (seed 001, figures 5/6): ratio to no snapshot at each chain length, 95 % interval.
    The seed's job for it is the mirror job; runs of the first plans deleted with the 4 KiB jobs."""
    data = a.summary[(a.summary.job == job) & a.summary.phase.isin(["create", "delete"])]
    color, shape = figures.series("phase", "phase", ["create", "delete"])
    base = alt.Chart(data).encode(
        x=alt.X("chain_length:Q", title="snapshots in chain", axis=alt.Axis(tickMinStep=1, format="d")),
        color=color)
    band = base.mark_area(opacity=0.2).encode(y="ratio_low:Q", y2="ratio_high:Q")
    y = alt.Y("ratio:Q", title="IOPS ÷ no snapshot")
    line = base.mark_line().encode(y=y)
    pts = figures.hollow_points(base).encode(
        y=y, shape=shape,
        tooltip=["variant", "phase", "chain_length", alt.Tooltip("ratio:Q", format=".2f")])
    return (band + line + pts).properties(width=220, height=180).facet(
        column=alt.Column("variant:N", title=None)).properties(
        title=f"{JOB_TITLES.get(job, job)}: creating, then deleting snapshots")


def table1_tex(a: ChainAnalysis) -> str:
    """Seed 001's Table 1 (loss with one snapshot, FIO columns) beside ours: one row per datastore and its
    stand-in, published value, ours with its 95 % interval from the pairs."""
    def ours(variant: str, job: str) -> str:
        key = f"chain_length.loss.{variant}.{job}"
        if not any(v.key == key for v in a.values):
            return "--"
        v = a.value(key)
        return f"{macros.fmt(v.value, 0)} [{macros.fmt(v.low, 0)}, {macros.fmt(v.high, 0)}]"

    def published(variant: str, job: str) -> str:
        p = PUBLISHED_LOSS[(variant, job)]
        return "no impact" if p == 0 else f"{macros.fmt(p, 0)}"

    rows = [[macros.tex_escape(STAND_IN[v]), macros.tex_escape(ENGINE_WORDS[v]),
             published(v, "randrw"), ours(v, "randrw"), published(v, "readwrite"), ours(v, "readwrite")]
            for v in STAND_IN if (v, "randrw") in a.pairs]
    return macros.render_table(
        ["datastore (seed 001)", "our stand-in", "random: seed", "random: ours", "sequential: seed",
         "sequential: ours"], rows, align="llrrrr")


UNIDENTIFIED_MARK = "$^{\\ast}$"   # explained in the fit table's caption (paper/sections/seed001.tex); not the
# claims table's dagger, which marks a provisional verdict (render.PROVISIONAL_MARK)


UNIDENTIFIED_WIDTH = 0.5   # of τ0: an interval around 0 this wide cannot tell no cost from a quarter of the base's


def unidentified(f: ChainFit) -> bool:
    """Whether the fit leaves the first-snapshot or the per-layer cost unidentified: its 95 % interval includes 0
    and is wider than half the base cost τ0 (the data cannot tell no cost from one of a quarter of the base's)."""
    return any(lo <= 0 <= hi and hi - lo > UNIDENTIFIED_WIDTH * f.tau0_us for lo, hi in f.ci95[1:])


# the configurations as the paper names them (a reader sees words, not the variants' identifiers)
CONFIG_WORDS = {"on-disk-metadata": "on-disk metadata", "in-memory-metadata": "in-memory metadata",
                LVM_THIN: "LVM thin"}


def fit_tex(a: ChainAnalysis) -> str:
    """The chain model per configuration and workload: τ0, τ1, τL (µs per completed I/O) with 95 % intervals, the
    runs fitted and R²; a row whose τ1 or τL is not identified is marked (unidentified)."""
    rows = []
    for (variant, job), f in sorted(a.fits.items()):
        mark = UNIDENTIFIED_MARK if unidentified(f) else ""
        rows.append([macros.tex_escape(CONFIG_WORDS.get(variant, variant)) + mark, macros.tex_escape(JOB_WORDS[job]),
                     *[f"{macros.fmt(getattr(f, p), 1)} [{macros.fmt(lo, 1)}, {macros.fmt(hi, 1)}]"
                       for p, (lo, hi) in zip(("tau0_us", "tau1_us", "tau_layer_us"), f.ci95, strict=False)],
                     str(f.points), macros.fmt(f.r2, 2)])
    return macros.render_table(
        ["configuration", "workload", "$\\tau_0$ ($\\mu$s)", "$\\tau_1$ ($\\mu$s)", "$\\tau_L$ ($\\mu$s)", "$n$",
         "$R^2$"], rows, align="llrrrrr")


def write(a: ChainAnalysis, figure_dir: Path | None = None, generated_dir: Path | None = None) -> None:
    """The figures and tables the paper's section inputs."""
    figures.save(chains_chart(a), "chain_length-chains", figure_dir)
    figures.save(mirror_chart(a), "chain_length-mirror", figure_dir)
    macros.write_table("chain_length-fit", fit_tex(a), generated_dir)
    macros.write_table("chain_length-table1", table1_tex(a), generated_dir)
