"""Charts and TeX tables of the calibration, from its analysis."""
from __future__ import annotations

from pathlib import Path

import altair as alt

from ...paper import figures, macros
from .analyse import FIGURE_WORDS, CalibrationAnalysis


def qd_chart(a: CalibrationAnalysis) -> alt.FacetChart:
    """IOPS versus queue depth per drive: geometric mean of the repeats with its 95 % interval (points and bars),
    and the model's prediction (dashed)."""
    base = alt.Chart(a.qd).encode(x=alt.X("iodepth:Q", scale=alt.Scale(type="log", base=2), title="queue depth"),
                                  color=alt.Color("drive:N", title="drive"))
    meas = base.mark_point(filled=True).encode(
        y=alt.Y("iops:Q", title="IOPS (4 KiB random)"),
        tooltip=["drive", "rw", "iodepth", alt.Tooltip("iops:Q", format=".0f"),
                 alt.Tooltip("model_iops:Q", format=".0f"), alt.Tooltip("ratio:Q", format=".2f"), "n"])
    bars = base.mark_rule().encode(y="iops_low:Q", y2="iops_high:Q")
    model = base.mark_line(strokeDash=[4, 3]).encode(y="model_iops:Q")
    return (model + bars + meas).properties(width=220, height=180).facet(
        column=alt.Column("rw:N", title=None)).properties(
        title="IOPS vs queue depth: measured (points, 95 % interval), model (dashed)")


def span_chart(a: CalibrationAnalysis) -> alt.LayerChart:
    """QD1 mean service time versus span: measured (points) and the seek-span model with the fitted figures."""
    base = alt.Chart(a.span).encode(
        x=alt.X("span:Q", scale=alt.Scale(type="log"), title="span (fraction of device)"),
        color=alt.Color("drive:N", title="drive"))
    meas = base.mark_point(filled=True, size=50).encode(
        y=alt.Y("measured_ms:Q", title="QD1 service time (ms)"),
        tooltip=["drive", "span", alt.Tooltip("measured_ms:Q", format=".3f"),
                 alt.Tooltip("model_fitted_ms:Q", format=".3f"), "ios"])
    model = base.mark_line(strokeDash=[4, 3]).encode(y="model_fitted_ms:Q")
    # the title in two lines: in one it set the chart's width, and so how small its labels print beside the reads
    return (model + meas).properties(width=320, height=200,
                                     title=["QD1 random reads vs span:", "measured (points), fitted model (dashed)"])


def reads_double_chart(a: CalibrationAnalysis) -> alt.LayerChart:
    """Host reads per VM read without and with the snapshot: mean of the repeats, 95 % interval."""
    data = a.reads_double_summary()
    base = alt.Chart(data).encode(x=alt.X("phase:N", title=None, sort=["none", "snapshot"]))
    bars = base.mark_bar().encode(
        y=alt.Y("host_reads_per_vm_read:Q", title="host reads per VM read"),
        tooltip=["phase", alt.Tooltip("host_reads_per_vm_read:Q", format=".2f"),
                 alt.Tooltip("low:Q", format=".2f"), alt.Tooltip("high:Q", format=".2f"), "n"])
    rules = base.mark_rule(color="black").encode(y="low:Q", y2="high:Q")
    # the title in two lines: in one it set the chart's width, and so how small its labels print beside the span
    return (bars + rules).properties(width=160, height=180,
                                     title=["Reads behind a qcow2 snapshot", "(emulated 10K RAID1)"])


def fit_tex(a: CalibrationAnalysis) -> str:
    """Datasheet and recovered read-seek figures (ms) per drive, the latter with its 95 % interval."""
    rows = []
    for name, f in a.fits.items():
        truth = a.drives[name].seek_read
        cells = [macros.tex_escape(name)]
        for k, ci in zip(FIGURE_WORDS, f.ci95_ms, strict=True):
            est = getattr(f, k)
            cells += [macros.fmt(getattr(truth, k), 2),
                      f"{macros.fmt(est, 3)} [{macros.fmt(est - ci, 3)}, {macros.fmt(est + ci, 3)}]"]
        rows.append(cells)
    return macros.render_table(["drive", "t2t sheet", "t2t fitted", "avg sheet", "avg fitted", "full sheet",
                                "full fitted"], rows, align="lrrrrrr")


def write(a: CalibrationAnalysis, figure_dir: Path | None = None, generated_dir: Path | None = None) -> None:
    """The figures and the table the paper's section inputs."""
    figures.save(qd_chart(a), "calibration-qd", figure_dir)
    figures.save(span_chart(a), "calibration-span", figure_dir)
    figures.save(reads_double_chart(a), "calibration-reads-double", figure_dir)
    macros.write_table("calibration-fit", fit_tex(a), generated_dir)
