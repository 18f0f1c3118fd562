"""Charts and TeX tables of the memory-dump study, from its analysis."""
from __future__ import annotations

from functools import partial
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from ...models import memory_dump as md
from ...paper import figures, macros
from .analyse import CURVE_PAGES, SEED_DEFAULT_S, SEED_TUNED_S, MemoryDumpAnalysis, end_text

GiB = 1 << 30
PAGES_X = alt.X("pages:Q", scale=alt.Scale(type="log", base=2), title="ioBlockPages (4 KiB pages per write)",
                axis=alt.Axis(values=list(CURVE_PAGES)))
ROLE_COLUMN = alt.Column("role:N", title=None)


def _wait(ms: pd.Series) -> pd.Series:
    return ms.map(lambda w: f"{w:g} ms")


def model_frame(a: MemoryDumpAnalysis, model: str | None = None) -> pd.DataFrame:
    """Per role, the curve of one model (default: each role's best by AIC) in s/GiB versus block size over the
    grid's block sizes (dense), for each wait of the grid."""
    rows = []
    lo, hi = int(a.meas.pages.min()), int(a.meas.pages.max())
    pages = np.unique(np.geomspace(lo, hi, 41).round().astype(int))
    for role, by_model in a.fits.items():
        d = md.delta_aic(by_model)
        name = model or min(d, key=lambda m: d[m])
        f = by_model[name]
        memory = float(a.meas[a.meas.role == role].memory_bytes.iloc[0])
        for w in sorted(a.meas.wait_ms.unique()):
            t = f.predict(np.full(len(pages), memory), pages * md.PAGE, np.full(len(pages), w / 1e3))
            rows += [{"role": role, "model": name, "pages": int(p), "wait_ms": float(w), "s_per_gib": float(x)
                      * GiB / memory} for p, x in zip(pages, t, strict=True)]
    out = pd.DataFrame(rows)
    out["wait"] = _wait(out.wait_ms)
    return out


def grid_chart(a: MemoryDumpAnalysis) -> alt.FacetChart:
    """Dump time per GiB versus block size, one colour per wait, per device: measured (points: geometric mean of
    the passes, with its 95 % interval, clipped at the plot's lower edge) and the best-fitting model by AIC (dashed
    lines)."""
    s = a.summary.assign(wait=_wait(a.summary.wait_ms))
    # the log-scale interval stays above zero, but with two passes (t(1) = 12.7) its lower end can lie far below
    # the points, and a group with a zero falls back to the linear one (stats.geometric_mean_interval): clip it at
    # half the smallest measured value, the plot's lower edge
    floor = float(s.s_per_gib.min()) / 2
    s["s_per_gib_low"] = s.s_per_gib_low.clip(lower=floor)
    s["s_per_gib_high"] = s.s_per_gib_high.clip(lower=floor)
    data = pd.concat([s.assign(kind="measured"), model_frame(a).assign(kind="model")], ignore_index=True)
    y = alt.Y("s_per_gib:Q", scale=alt.Scale(type="log"), title="dump time per GiB (s)")
    # waits that time alike at a block size (the wait hidden under the I/O) sit on one another: each wait also has
    # its own hollow shape, so a point under another stays visible (figures.series: one legend for both); the
    # waits in increasing order
    color, shape = figures.series("wait", "ioWait", _wait(pd.Series(sorted(s.wait_ms.unique()))).tolist())
    base = alt.Chart().encode(x=PAGES_X, color=color)
    measured = base.transform_filter(alt.datum.kind == "measured")
    pts = figures.hollow_points(measured).encode(
        y=y, shape=shape, tooltip=["device", "pages", "wait_ms", alt.Tooltip("dump_s:Q", format=".2f"),
                                   alt.Tooltip("s_per_gib:Q", format=".1f"),
                                   alt.Tooltip("iteration_ms:Q", format=".2f"), "n"])
    bars = measured.mark_rule().encode(y="s_per_gib_low:Q", y2="s_per_gib_high:Q")
    lines = base.transform_filter(alt.datum.kind == "model").mark_line(strokeDash=[4, 3]).encode(y=y)
    return alt.layer(lines, bars, pts, data=data).properties(width=260, height=220).facet(
        column=ROLE_COLUMN).properties(
        title="Page-walker dump time per GiB (points: measured, 95 % interval; dashed: best model by AIC)")


def prediction_chart(a: MemoryDumpAnalysis) -> alt.FacetChart:
    """The seed's two 4 GiB timings as each model predicts them from each device's fit (points, 95 % interval),
    against the published timings (black rules)."""
    seed = pd.DataFrame({"setting": ["default", "tuned"], "published_s": [SEED_DEFAULT_S, SEED_TUNED_S]})
    data = a.predictions.merge(seed, on="setting")
    y = alt.Y("predicted_s:Q", scale=alt.Scale(type="log"), title="4 GiB dump time (s)")
    base = alt.Chart().encode(x=alt.X("model:N", title=None), color=alt.Color("role:N", title="device"),
                              xOffset="role:N")
    pts = base.mark_point(filled=True, size=50).encode(
        y=y, tooltip=["role", "model", "setting", alt.Tooltip("predicted_s:Q", format=".1f"),
                      alt.Tooltip("to_seed:Q", format=".2f")])
    bars = base.mark_rule().encode(y="low:Q", y2="high:Q")
    rule = alt.Chart().mark_rule(color="black").encode(y="mean(published_s):Q")
    return alt.layer(rule, bars, pts, data=data).properties(width=220, height=200).facet(
        column=alt.Column("setting:N", title=None)).properties(
        title="Seed 003's 4 GiB timings (black) predicted from each device's fits (95 % intervals)")


def curve_chart(a: MemoryDumpAnalysis) -> alt.FacetChart:
    """The best (ioBlockPages, ioWait) as a curve: the 4 GiB dump time versus block size when the wait keeps the
    device busy a fraction u of the time (u = 1: no wait), from each device's `after` fit."""
    c = a.curve.assign(busy=a.curve.duty.map(lambda u: f"{u:.0%} busy"))
    base = alt.Chart().encode(x=PAGES_X, color=alt.Color("busy:N", title="device busy", sort=None))
    line = base.mark_line(point=True).encode(
        y=alt.Y("dump_4gib_s:Q", scale=alt.Scale(type="log"), title="4 GiB dump time (s)"),
        tooltip=["role", "pages", alt.Tooltip("wait_ms:Q", format=".2f"), alt.Tooltip("dump_4gib_s:Q", format=".1f")])
    return alt.layer(line, data=c).properties(width=260, height=200).facet(column=ROLE_COLUMN).properties(
        title="Best setting for a device: wait = s(B)(1 - u)/u keeps it busy a fraction u")


def guest_progress_chart(a: MemoryDumpAnalysis) -> alt.LayerChart | alt.FacetChart:
    """The real VM dump: the guest program's progress (probe pages per second between status lines) over the
    guest's life, with each dump's window shaded by its method. Where the line drops inside a window, the dump
    slowed the guest down."""
    dumps = a.guest.rename(columns={"start_s": "start", "end_s": "end"})
    probe = a.guest_samples[a.guest_samples.job == "probe"]
    x = alt.X("t:Q", title="seconds since the guest started (host clock)")
    shade = alt.Chart(dumps).mark_rect(opacity=0.25).encode(
        x=alt.X("start:Q", title="seconds since the guest started (host clock)"), x2="end:Q",
        color=alt.Color("label:N", title="dump"),
        tooltip=["label", "repeat", alt.Tooltip("dump_s:Q", format=".2f"), alt.Tooltip("slowdown:Q", format=".2f")])
    line = alt.Chart(probe).mark_line(color="black", strokeWidth=1).encode(
        x=x, y=alt.Y("pages_s:Q", title="guest progress (probe pages/s)"))
    return alt.layer(shade, line).properties(width=560, height=220, title=(
        "Real VM memory dump (QEMU, TCG guest): the guest program's progress; shaded: the dumps"))


def guest_compare_frame(a: MemoryDumpAnalysis) -> pd.DataFrame:
    """Per dump label, the guest's time per GiB of RAM (geometric mean, 95 % interval) beside the page-walker's at
    the same point on the ssd role (arithmetic mean, as in the ratio of means `to_walker`) and the two models'
    predictions (s per GiB), long form for a chart."""
    g = a.guest_summary
    if g.empty:
        return pd.DataFrame(columns=["label", "what", "s_per_gib", "low", "high"])
    mem = float(a.guest.memory_bytes.iloc[0])
    rows = []
    for r in g.itertuples(index=False):
        rows.append({"label": r.label, "what": "guest dump (measured)", "s_per_gib": r.s_per_gib,
                     "low": r.s_per_gib_low, "high": r.s_per_gib_high})
        rows.append({"label": r.label, "what": "fio page-walker, same point (ssd)", "s_per_gib": r.walker_s_per_gib,
                     "low": np.nan, "high": np.nan})
        rows.append({"label": r.label, "what": "ssd 'after' fit", "s_per_gib": r.predict_fit_s * GiB / mem,
                     "low": r.predict_fit_low * GiB / mem, "high": r.predict_fit_high * GiB / mem})
        if np.isfinite(r.predict_bw_s):
            rows.append({"label": r.label, "what": "bytes sent / bandwidth limit", "s_per_gib": r.predict_bw_s * GiB
                         / mem, "low": np.nan, "high": np.nan})
    return pd.DataFrame(rows)


def guest_compare_chart(a: MemoryDumpAnalysis) -> alt.LayerChart | alt.FacetChart:
    """Time per GiB of the real VM dump (95 % interval) beside the page-walker at the same point and the models."""
    data = guest_compare_frame(a)
    base = alt.Chart(data).encode(x=alt.X("label:N", title=None, axis=alt.Axis(labelAngle=0)), xOffset="what:N",
                                  color=alt.Color("what:N", title=None))
    pts = base.mark_point(filled=True, size=60).encode(
        y=alt.Y("s_per_gib:Q", title="dump time per GiB (s)"),
        tooltip=["label", "what", alt.Tooltip("s_per_gib:Q", format=".2f")])
    bars = base.mark_rule().encode(y="low:Q", y2="high:Q")
    return alt.layer(bars, pts).properties(width=360, height=220, title=(
        "Real VM dump vs. the fio page-walker and the models (per GiB)"))


def guest_tex(a: MemoryDumpAnalysis) -> str:
    """Per dump: bandwidth limit, dump time (geometric mean, 95 % interval) and time per GiB (its point: the same
    interval scaled by the guest's RAM; printed once, so the table is legible at the page's width), rate (geometric
    mean), bytes written per byte of RAM, passes, the guest's slowdown (95 % interval), and measured ÷ page-walker,
    ÷ bandwidth model, ÷ fit."""
    rows = []
    for r in a.guest_summary.itertuples(index=False):
        def ci(est: float, lo: float, hi: float, d: int) -> str:
            return f"{macros.fmt(est, d)} [{macros.fmt(lo, d)}, {macros.fmt(hi, d)}]"
        rows.append([macros.tex_escape(r.label), "--" if not np.isfinite(r.bandwidth_mib_s)
                     else macros.fmt(r.bandwidth_mib_s, 0), ci(r.dump_s, r.dump_s_low, r.dump_s_high, 2),
                     macros.fmt(r.s_per_gib, 1), macros.fmt(r.rate_mib_s, 0),
                     macros.fmt(r.file_per_ram, 2), macros.fmt(r.passes, 0),
                     ci(r.slowdown, r.slowdown_low, r.slowdown_high, 2), macros.fmt(r.to_walker, 2),
                     "--" if not np.isfinite(r.to_bw) else macros.fmt(r.to_bw, 2), macros.fmt(r.to_fit, 2)])
    return macros.render_table(["dump", "limit", "time (s)", "s/GiB", "MiB/s", "file/RAM", "passes",
                                "guest speed", "/walker", "/bw", "/fit"], rows, align="lrrrrrrrrrr")


def fit_tex(a: MemoryDumpAnalysis) -> str:
    """Per device and model: s0 (ms), bandwidth (MiB/s), the model's own parameter, each with its 95 % interval;
    rms relative residual and ΔAIC."""
    rows = []
    for role, by_model in a.fits.items():
        d = md.delta_aic(by_model)
        for name, f in by_model.items():
            cells = [macros.tex_escape(role), macros.tex_escape(name)]
            for p, digits in (("s0_ms", 2), ("bw_mib_s", 1), ("delta_ms", 2), ("z", 3)):
                if p in f.params:
                    lo, hi = f.ci95[p]
                    number = partial(macros.fmt, digits=digits)
                    cells.append(f"{number(f.params[p])} [{end_text(lo, number)}, {end_text(hi, number)}]")
                else:
                    cells.append("--")
            cells += [macros.fmt(f.rms_pct, 1), macros.fmt(d[name], 1)]
            rows.append(cells)
    return macros.render_table(["device", "model", "$s_0$ (ms)", "bw (MiB/s)", "$\\delta$ (ms)", "$z$",
                                "rms (\\%)", "$\\Delta$AIC"], rows, align="llrrrrrr")


def write(a: MemoryDumpAnalysis, figure_dir: Path | None = None, generated_dir: Path | None = None) -> None:
    """The figures and the table the paper's section inputs."""
    figures.save(grid_chart(a), "memory_dump-grid", figure_dir)
    figures.save(prediction_chart(a), "memory_dump-predictions", figure_dir)
    figures.save(curve_chart(a), "memory_dump-curve", figure_dir)
    macros.write_table("memory_dump-fit", fit_tex(a), generated_dir)
    if not a.guest.empty:
        figures.save(guest_progress_chart(a), "memory_dump-guest-progress", figure_dir)
        figures.save(guest_compare_chart(a), "memory_dump-guest-compare", figure_dir)
        macros.write_table("memory_dump-guest", guest_tex(a), generated_dir)
