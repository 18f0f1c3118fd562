"""Charts (altair): interactive in notebooks, static PDF/SVG for the paper through vl-convert."""
from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd

from . import paths

alt.data_transformers.disable_max_rows()

JOB_TITLES = {"randrw": "random 4 KiB (randrw)", "readwrite": "sequential 4 KiB (readwrite)"}


def chain_chart(rel: pd.DataFrame, job: str, phase: str = "create", title: str | None = None) -> alt.Chart:
    """IOPS versus chain length per variant: median line, repeat range as a band (seed 001, figures 1/2)."""
    data = rel[(rel.job == job) & (rel.phase == phase)]
    base = alt.Chart(data).encode(
        x=alt.X("chain_length:Q", title="snapshots in chain", axis=alt.Axis(tickMinStep=1, format="d")),
        color=alt.Color("variant:N", title="qcow2 configuration"))
    band = base.mark_area(opacity=0.2).encode(y="low:Q", y2="high:Q")
    line = base.mark_line(point=True).encode(
        y=alt.Y("median:Q", title="IOPS (read + write)"),
        tooltip=["variant", "chain_length", alt.Tooltip("median:Q", format=".0f"),
                 alt.Tooltip("ratio_median:Q", format=".2f", title="÷ no snapshot"), "n"])
    return (band + line).properties(title=title or JOB_TITLES.get(job, job), width=300, height=200).interactive()


def mirror_chart(rel: pd.DataFrame, job: str) -> alt.Chart:
    """Create versus delete (seed 001, figures 5/6): ratio to no snapshot at each chain length."""
    data = rel[(rel.job == job) & rel.phase.isin(["create", "delete"])]
    base = alt.Chart(data).encode(
        x=alt.X("chain_length:Q", title="snapshots in chain", axis=alt.Axis(tickMinStep=1, format="d")),
        color=alt.Color("phase:N", title="phase", sort=["create", "delete"]))
    band = base.mark_area(opacity=0.2).encode(y="ratio_low:Q", y2="ratio_high:Q")
    line = base.mark_line(point=True).encode(
        y=alt.Y("ratio_median:Q", title="IOPS ÷ no snapshot"),
        tooltip=["variant", "phase", "chain_length", alt.Tooltip("ratio_median:Q", format=".2f")])
    return (band + line).properties(width=220, height=180).facet(
        column=alt.Column("variant:N", title=None)).properties(
        title=f"{JOB_TITLES.get(job, job)}: creating, then deleting snapshots")


def save(chart: alt.TopLevelMixin, name: str, directory: Path | None = None) -> list[Path]:
    """Write `name`.pdf and `name`.svg (static, for LaTeX and the web) with vl-convert."""
    import vl_convert as vlc

    directory = directory or paths.FIGURES_DIR
    directory.mkdir(parents=True, exist_ok=True)
    spec = chart.to_json()
    out = []
    for ext, convert in (("pdf", vlc.vegalite_to_pdf), ("svg", vlc.vegalite_to_svg)):
        path = directory / f"{name}.{ext}"
        data = convert(spec)
        tmp = path.with_suffix(f".{ext}.tmp")
        tmp.write_bytes(data if isinstance(data, bytes) else data.encode())
        tmp.replace(path)
        out.append(path)
    return out
