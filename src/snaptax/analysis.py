"""Tidy tables from published runs: per-measurement totals, per-point summaries with spread, ratios.

Ratios are only ever formed within one run (one session on one rig), never across runs.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .record import MANIFEST, RESULTS

KEYS = ["variant", "index", "phase", "job", "rw", "repeat", "chain_length"]


def manifest(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / MANIFEST).read_text())


def results(run_dir: Path) -> pd.DataFrame:
    """results.csv of a run: one row per measurement and direction."""
    return pd.read_csv(Path(run_dir) / RESULTS)


def per_measurement(df: pd.DataFrame) -> pd.DataFrame:
    """One row per fio run: read + write IOPS and I/Os; host-level counter deltas (same for both directions).

    Columns: KEYS…, iops, read_iops, write_iops, read_ios, write_ios, host_* .
    """
    host_cols = [c for c in df.columns if c.startswith("host_")]
    pivot = df.pivot_table(index=KEYS, columns="direction", values=["iops", "ios"], aggfunc="sum",
                           fill_value=0)
    pivot.columns = [f"{d}_{v}" for v, d in pivot.columns]
    out = pivot.reset_index()
    for col in ("read_iops", "write_iops", "read_ios", "write_ios"):
        if col not in out:
            out[col] = 0.0
    out["iops"] = out["read_iops"] + out["write_iops"]
    if host_cols:
        host = df.groupby(KEYS, as_index=False)[host_cols].first()
        out = out.merge(host, on=KEYS)
    return out.sort_values("index").reset_index(drop=True)


def summarize(meas: pd.DataFrame, value: str = "iops",
              by: tuple[str, ...] = ("variant", "job", "phase", "chain_length")) -> pd.DataFrame:
    """Median, min, max and count of `value` over repeats at each point."""
    g = meas.groupby(list(by))[value]
    out = g.agg(median="median", low="min", high="max", n="count").reset_index()
    return out


def relative_to_baseline(summary: pd.DataFrame, baseline_phase: str = "create") -> pd.DataFrame:
    """Add ratio columns: each point's median/low/high over the median at chain length 0 of `baseline_phase`,
    same variant and job (so every ratio is formed inside one run)."""
    base = (summary[(summary.phase == baseline_phase) & (summary.chain_length == 0)]
            .set_index(["variant", "job"])["median"].rename("baseline"))
    out = summary.join(base, on=["variant", "job"])
    for col in ("median", "low", "high"):
        out[f"ratio_{col}"] = out[col] / out["baseline"]
    return out


def loss_at(rel: pd.DataFrame, chain_length: int = 1, phase: str = "create") -> pd.DataFrame:
    """Loss in percent at a chain length, relative to no snapshot: 100·(1 − ratio), with the spread of the
    repeats (the repeat extremes over the baseline median)."""
    sel = rel[(rel.phase == phase) & (rel.chain_length == chain_length)].copy()
    sel["loss_pct"] = 100 * (1 - sel["ratio_median"])
    sel["loss_pct_low"] = 100 * (1 - sel["ratio_high"])
    sel["loss_pct_high"] = 100 * (1 - sel["ratio_low"])
    return sel[["variant", "job", "loss_pct", "loss_pct_low", "loss_pct_high", "median", "baseline", "n"]]


def host_reads_per_vm_read(meas: pd.DataFrame, counter: str = "host_disk_reads") -> pd.Series:
    """Host-level read requests per guest-level read (seed 000: 'reads double' behind a redo log)."""
    return meas[counter] / meas["read_ios"].where(meas["read_ios"] > 0)


def outcomes_frame(outcomes: list) -> pd.DataFrame:
    """Claim outcomes (snaptax.claims.Outcome) as a table for notebooks: published, ours with range, verdict."""
    return pd.DataFrame([{"claim": o.claim.statement, "published": o.claim.published_text or o.claim.published,
                          "ours": round(o.ours, 1), "low": round(o.low, 1), "high": round(o.high, 1),
                          "stand-in": o.context, "verdict": o.verdict} for o in outcomes])
