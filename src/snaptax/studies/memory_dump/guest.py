"""The guest phase of a memory-dump run (a real QEMU memory dump of a TCG guest, guest_dump.json): one row per dump,
the guest's progress around it, the dumps' summary per label beside the page walker and two predictions, and their
values for the paper. Part of the memory-dump analysis (analyse reads it). Pure."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...models import memory_dump as md
from ...stats import geometric_mean_interval, paired_ratio_interval, ratio_of_means_interval
from ...values import Value
from .plan import SSD, STUDY

GiB, MiB = 1 << 30, 1 << 20
PREDICTION_METHOD = ("delta method on log T, or the prediction's profile likelihood within the physical range where a "
                     "bound is active (DumpFit.predict_interval)")

UNTHROTTLED = md.WalkerPoint(2048, 0)   # the walker point a dump without a bandwidth limit is set beside
GUEST_COLUMNS = ["method", "label", "repeat", "start_s", "end_s", "pages", "wait_ms", "bandwidth_mib_s",
                 "memory_bytes", "dump_s",
                 "transferred_bytes", "file_bytes", "ram_bytes", "rate_mib_s", "s_per_gib", "file_per_ram", "passes",
                 "downtime_ms", "probe_before", "probe_during", "slowdown", "dirty_before", "dirty_during",
                 "zero_pages", "normal_pages"]


def _rate(samples: list[dict], job: str, t_from: float, t_to: float) -> float:
    """Pages per second of a guest fio job between two host times (from its status lines inside the window, fio's
    runtime as the clock); nan with fewer than two lines inside."""
    inside = [s for s in samples if s["job"] == job and t_from <= s["t"] <= t_to]
    if len(inside) < 2 or inside[-1]["runtime_s"] <= inside[0]["runtime_s"]:
        return math.nan
    return (inside[-1]["pages"] - inside[0]["pages"]) / (inside[-1]["runtime_s"] - inside[0]["runtime_s"])


def guest_table(doc: dict | None) -> pd.DataFrame:
    """One row per guest dump (guest_dump.json): its method, the walker point it stands for, bandwidth limit
    (MiB/s; nan: none), dump time, bytes sent and written, achieved rate (MiB/s of bytes sent), time per GiB of
    guest RAM, precopy passes, downtime, and the guest's progress (probe pages/s) in the baseline window before
    the dump and during it, with their ratio `slowdown` (during ÷ before; < 1: the guest ran slower)."""
    if not doc:
        return pd.DataFrame(columns=GUEST_COLUMNS)
    memory = int(doc["memory_mib"]) * MiB
    samples = doc["samples"]
    rows = []
    for plan, d in zip(doc["planned"], doc["dumps"], strict=True):
        point = plan["point"]
        before = (d["start_s"] - d["request"]["baseline_s"], d["start_s"])
        during = (d["start_s"], d["end_s"])
        pb, pd_ = _rate(samples, "probe", *before), _rate(samples, "probe", *during)
        bw = plan["bandwidth_bytes_s"]
        rows.append({"method": plan["method"], "label": plan["label"], "repeat": int(plan["repeat"]),
                     "start_s": float(d["start_s"]), "end_s": float(d["end_s"]),
                     "pages": point[0] if point else UNTHROTTLED.block_pages,
                     "wait_ms": float(point[1]) if point else UNTHROTTLED.wait_ms,
                     "bandwidth_mib_s": bw / MiB if bw else math.nan, "memory_bytes": memory,
                     "dump_s": float(d["dump_s"]), "transferred_bytes": int(d["transferred_bytes"]),
                     "file_bytes": int(d["file_bytes"]), "ram_bytes": int(d["ram_total_bytes"]),
                     "rate_mib_s": d["transferred_bytes"] / d["dump_s"] / MiB,
                     "s_per_gib": float(d["dump_s"]) * GiB / memory, "file_per_ram": d["file_bytes"] / memory,
                     "passes": d["dirty_sync_count"] if d["dirty_sync_count"] is not None else math.nan,
                     "downtime_ms": d["downtime_ms"] if d["downtime_ms"] is not None else math.nan,
                     "probe_before": pb, "probe_during": pd_, "slowdown": pd_ / pb if pb > 0 else math.nan,
                     "dirty_before": _rate(samples, "dirty", *before),
                     "dirty_during": _rate(samples, "dirty", *during),
                     # QEMU's count of all-zero pages (ram.duplicate) and whole ones; nan before they were recorded
                     "zero_pages": _page_count(d, "zero_pages"), "normal_pages": _page_count(d, "normal_pages")})
    return pd.DataFrame(rows, columns=GUEST_COLUMNS)


def _page_count(dump: dict, name: str) -> float:
    value = dump.get(name)
    return math.nan if value is None else float(value)


def zero_pct(guest: pd.DataFrame) -> float:
    """The share of the pages the guest's dumps sent that QEMU found all-zero (ram.duplicate over duplicate +
    normal, all dumps pooled, %): what a dump that skips zero pages would skip of this guest (nan: not recorded)."""
    sent = guest.zero_pages + guest.normal_pages
    ok = sent.notna() & (sent > 0)
    return 100 * float(guest.zero_pages[ok].sum() / sent[ok].sum()) if ok.any() else math.nan


def guest_samples(doc: dict | None) -> pd.DataFrame:
    """The guest's progress as a time series: host time (s since qemu started), job, pages/s since the previous
    status line of the same job (fio's runtime as the clock)."""
    if not doc:
        return pd.DataFrame(columns=["t", "job", "pages_s"])
    df = pd.DataFrame(doc["samples"])
    out = []
    for job, g in df.groupby("job"):
        g = g.sort_values("t")
        dt = g.runtime_s.diff()
        out.append(pd.DataFrame({"t": g.t, "job": job, "pages_s": (g.pages.diff() / dt).where(dt > 0)}))
    return pd.concat(out).dropna().sort_values(["job", "t"]).reset_index(drop=True)


def guest_summarize(guest: pd.DataFrame, meas: pd.DataFrame, fits: dict[str, dict[str, md.DumpFit]]) -> pd.DataFrame:
    """Per dump label: n, dump time, time per GiB, achieved rate (geometric means over the dumps with their 95 %
    log-t intervals: stats.geometric_mean_interval), file bytes per byte of RAM and passes (arithmetic means), the
    guest's slowdown (paired by dump: during ÷ before, log-ratio t) with its 95 % interval; beside them the
    page-walker at the same point on the ssd role (its arithmetic mean time per GiB, and guest ÷ walker as a ratio
    of arithmetic means), and two model predictions
    of the guest's dump time: `bw` = the bytes sent at the bandwidth limit (one pass at the limit), and `fit` =
    the ssd role's fitted `after` model at the point for the guest's RAM (with its 95 % interval)."""
    rows = []
    walker = meas[meas.role == SSD] if len(meas) else meas
    after = fits.get(SSD, {}).get("after")
    for label, g in guest.groupby("label", sort=False):
        t = geometric_mean_interval(g.dump_s.to_numpy())
        gib = geometric_mean_interval(g.s_per_gib.to_numpy())
        rate = geometric_mean_interval(g.rate_mib_s.to_numpy())
        slow = paired_ratio_interval(g.probe_during.to_numpy(), g.probe_before.to_numpy())
        p = md.WalkerPoint(int(g.pages.iloc[0]), float(g.wait_ms.iloc[0]))
        w = walker[walker.label == p.label].s_per_gib.to_numpy() if len(walker) else np.array([])
        to_w = ratio_of_means_interval(g.s_per_gib.to_numpy(), w)
        memory = float(g.memory_bytes.iloc[0])
        bw = float(g.bandwidth_mib_s.iloc[0])
        pred_bw = float(g.transferred_bytes.mean()) / (bw * MiB) if math.isfinite(bw) else math.nan
        fit_t, fit_lo, fit_hi = after.predict_interval(memory, p.block_bytes, p.wait_s) if after else (math.nan,) * 3
        rows.append({"label": label, "method": g.method.iloc[0], "point": p.label, "bandwidth_mib_s": bw,
                     "n": t.n, "dump_s": t.estimate, "dump_s_low": t.low, "dump_s_high": t.high,
                     "dump_s_method": t.method, "s_per_gib": gib.estimate, "s_per_gib_low": gib.low,
                     "s_per_gib_high": gib.high, "s_per_gib_method": gib.method, "rate_mib_s": rate.estimate,
                     "rate_mib_s_low": rate.low, "rate_mib_s_high": rate.high, "rate_mib_s_method": rate.method,
                     "file_per_ram": float(g.file_per_ram.mean()), "passes": float(g.passes.mean()),
                     "downtime_ms": float(g.downtime_ms.mean()),
                     "slowdown": slow.estimate, "slowdown_low": slow.low, "slowdown_high": slow.high,
                     "slowdown_n": slow.n, "walker_s_per_gib": float(w.mean()) if len(w) else math.nan,
                     "to_walker": to_w.estimate, "to_walker_low": to_w.low, "to_walker_high": to_w.high,
                     "to_walker_n": to_w.n, "predict_bw_s": pred_bw, "to_bw": t.estimate / pred_bw,
                     "predict_fit_s": fit_t, "predict_fit_low": fit_lo, "predict_fit_high": fit_hi,
                     "to_fit": t.estimate / fit_t})
    return pd.DataFrame(rows)


def guest_values(doc: dict | None, summary: pd.DataFrame) -> list[Value]:
    if not doc:
        return []
    k = f"{STUDY}.guest"
    out = [Value(f"{k}.memory_mib", float(doc["memory_mib"]), "MiB"),
           Value(f"{k}.fill_mib", float(doc["dirtier"]["fill_mib"]), "MiB"),
           Value(f"{k}.dirty_pages_s", float(doc["dirtier"]["dirty_pages_s"]), "pages/s"),
           Value(f"{k}.dirty_mib_s", doc["dirtier"]["dirty_pages_s"] * md.PAGE / MiB, "MiB/s", digits=1),
           Value(f"{k}.background_works", text="yes" if doc["background_snapshot"] else "no"),
           Value(f"{k}.boot_to_start_s", float(doc["boot_to_start_s"]), "s", digits=1),
           Value(f"{k}.wall_s", float(doc["wall_s"]), "s", digits=0)]
    for r in summary.itertuples(index=False):
        key = f"{k}.{{}}.{r.label}"
        n = int(r.n)
        slowdown = Value.where_defined(key.format("slowdown"), r.slowdown, r.slowdown_low, r.slowdown_high,
                                       int(r.slowdown_n), "×", 2, "paired log-ratio t")
        out += [Value.where_defined(key.format("dump_s"), r.dump_s, r.dump_s_low, r.dump_s_high, n, "s", 2,
                                    r.dump_s_method),
                Value.where_defined(key.format("s_per_gib"), r.s_per_gib, r.s_per_gib_low, r.s_per_gib_high, n,
                                    "s/GiB", 1, r.s_per_gib_method),
                Value.where_defined(key.format("rate_mib_s"), r.rate_mib_s, r.rate_mib_s_low, r.rate_mib_s_high, n,
                                    "MiB/s", 0, r.rate_mib_s_method),
                slowdown,
                # below 1: the dump measurably slowed the guest; the paper prints which, run by run
                Value(key.format("slowdown") + ".vs_one", text=slowdown.side_of(1.0)),
                Value(key.format("file_per_ram"), r.file_per_ram, "×", digits=2),
                Value(key.format("repeats"), float(n), "")]
        if math.isfinite(r.bandwidth_mib_s):
            out += [Value(key.format("bandwidth_mib_s"), r.bandwidth_mib_s, "MiB/s", digits=1),
                    Value(key.format("predict_bw_s"), r.predict_bw_s, "s", digits=2),
                    Value(key.format("to_bw"), r.to_bw, "×", digits=2)]
        if math.isfinite(r.passes):
            out.append(Value(key.format("passes"), r.passes, "", digits=1))
        if math.isfinite(r.downtime_ms):
            out.append(Value(key.format("downtime_ms"), r.downtime_ms, "ms", digits=0))
        if math.isfinite(r.walker_s_per_gib):
            out += [Value(key.format("walker_s_per_gib"), r.walker_s_per_gib, "s/GiB", digits=1),
                    Value.where_defined(key.format("to_walker"), r.to_walker, r.to_walker_low, r.to_walker_high,
                                        int(r.to_walker_n), "×", 2, "ratio of means")]
        if math.isfinite(r.predict_fit_s):
            out += [Value(key.format("predict_fit_s"), r.predict_fit_s, "s", r.predict_fit_low, r.predict_fit_high,
                          0, 2, None, f"ssd after fit, {PREDICTION_METHOD}"),
                    Value(key.format("to_fit"), r.to_fit, "×", digits=2)]
    return out


__all__ = ["GUEST_COLUMNS", "PREDICTION_METHOD", "UNTHROTTLED", "guest_samples", "guest_summarize", "guest_table",
           "guest_values", "zero_pct"]
