"""The array-native contrast: LVM thin's timelines on both pools (lvmthin_values), and its loss after lvremove on
the untiered pool against two models that can refute each other's account: the two-region layout's span model
(the emulated pool's own, recorded by measure.span_model) and the copy load (snaptax.models.copy_load)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ...models import copy_load
from ...values import Value
from .plan import (
    LVM_THIN,
    POOLS,
    STUDY,
    TIERED,
    lvmthin_variant,
)
from .tables import BATCH_S, LAYOUT_COLUMNS

LVM_THIN_PHASES = ("initial", "with", "after", "relearned")


def _stays(phases: pd.DataFrame) -> str:
    """The misplacement model's prediction for the two engines on the tiered pool after the snapshot's deletion,
    which the measured shares can refute: qcow2's commit copies the data back onto the base's promoted extents, so
    its SSD-served share returns towards the initial one; LVM thin's lvremove copies nothing, so its share stays at
    or below the with-snapshot level until a cycle ends. 'holds' when, on the tiered pool, qcow2's after-share lies
    above the midpoint of its with and initial shares and LVM thin's below the midpoint of its own; 'refuted'
    otherwise; 'n/a' without both timelines."""
    def shares(variant: str) -> dict[str, float]:
        v = phases[phases.pool == variant] if not phases.empty else phases
        return {r.phase: float(r.ssd_share) for r in v.itertuples()}
    q, t = shares(TIERED), shares(lvmthin_variant(TIERED))
    need = {"initial", "with", "after"}
    if not (need <= set(q) and need <= set(t)) or not all(math.isfinite(x) for x in (*q.values(), *t.values())):
        return "n/a"
    back = q["after"] > (q["with"] + q["initial"]) / 2
    stays = t["after"] < (t["with"] + t["initial"]) / 2
    return "holds" if back and stays else "refuted"


def remapped_fraction(meas: pd.DataFrame, variant: str, chunk_size: float, phase: str = "with") -> float:
    """The share (0 … 1) of the volume's chunks that LVM thin had moved to newly allocated chunks by the end of
    `phase`: under the snapshot (settle, with) the chunks broken since it was taken (the guest's pool counters),
    over the volume's mapped chunks; after lvremove that share of the data lies in the region allocated after the
    volume's. For `after`: the with-phase share plus the chunks copied in the after phase (chunks_copied: a deleted
    snapshot's time stamps still mark the origin's older chunks shared, so a first write still moves one; the pool's
    usage cannot show it, as the old chunk is freed as the new one is taken). nan where not measured."""
    if meas.empty or not chunk_size > 0:
        return math.nan
    source = "with" if phase == "after" else phase
    m = meas[(meas.pool == variant) & (meas.phase == source)]
    if m.empty:
        return math.nan
    mapped = float(m.mapped_bytes.iloc[0]) / chunk_size
    broken = float(m.chunks_broken.iloc[0])
    if phase == "after":
        a = meas[(meas.pool == variant) & (meas.phase == "after")]
        broken += float(a.chunks_copied.iloc[0]) if len(a) else math.nan
    return min(1.0, broken / mapped) if mapped > 0 else math.nan


def span_model_ratio(curve: dict[str, list], f: float) -> tuple[float, float, float]:
    """The emulated pool's own model of the load over the two-region layout (measure.span_model), at the share f of
    the data in the second region (0 … 1): (ratio, low, high) in % of the one-region rate, linear between the
    modelled fractions; nans outside them or without the curve."""
    xs = curve.get("fraction") or []
    if not xs or not math.isfinite(f) or not xs[0] <= f <= xs[-1]:
        return (math.nan, math.nan, math.nan)
    return tuple(float(np.interp(f, xs, curve[k])) for k in ("ratio_pct", "ratio_low", "ratio_high"))  # type: ignore[return-value]


def span_model_seeds(curve: dict[str, list]) -> int:
    """How many seeds the span model (measure.span_model) ran; 0 without one."""
    return len(curve["seeds"]) if curve else 0


def copy_model_values(meas: pd.DataFrame, variant: str, chunk_size: float, curve: dict[str, list],
                      with_ratio: Value | None, after_ratio: Value | None, base: str,
                      read_fraction: float) -> list[Value]:
    """The copy-load model (models.copy_load) on an untiered pool's LVM thin timeline: the copy cost k fitted on the
    with-snapshot phase (its ratio, its copied share of writes, the span model at its mean remapped share), the
    after-lvremove ratio it predicts from that phase's own copies and layout, and whether the measured ratio lies
    in the predicted interval (`{STUDY}.predict.lvmthin_copies_explain_after`). The interval covers the with
    ratio's interval only (the span model's central value is used). `read_fraction`: the load's, as recorded."""
    w = 1 - read_fraction
    f = {ph: remapped_fraction(meas, variant, chunk_size, ph) for ph in ("settle", "with", "after")}

    def copied(ph: str) -> float:
        m = meas[(meas.pool == variant) & (meas.phase == ph)] if not meas.empty else meas
        return float(m.copied_write_pct.iloc[0]) / 100 if len(m) else math.nan

    s_with = span_model_ratio(curve, (f["settle"] + f["with"]) / 2)[0] / 100
    s_after = span_model_ratio(curve, (f["with"] + f["after"]) / 2)[0] / 100
    nan3 = (math.nan, math.nan, math.nan)
    cost = None
    if with_ratio is not None and with_ratio.has_interval:
        cost = copy_load.fit(with_ratio.value / 100, with_ratio.low / 100, with_ratio.high / 100, s_with, w,
                             copied("with"))
    k, k_lo, k_hi = (cost.k, cost.k_low, cost.k_high) if cost is not None else nan3
    est, lo, hi = copy_load.predict(cost, s_after, w, copied("after")) if cost is not None else nan3
    model = Value.where_defined(f"{base}.after.copy_model_ratio", 100 * est, 100 * lo, 100 * hi,
                                with_ratio.n if with_ratio is not None else 0, "%", 1,
                                "copy cost fitted on the with phase; the with ratio's interval")
    verdict = _explains(after_ratio, model) if after_ratio is not None else "n/a"
    return [Value(f"{base}.after.remapped_end_pct", 100 * f["after"], "%", digits=0),
            Value.where_defined(f"{base}.copy_cost", k, k_lo, k_hi, with_ratio.n if with_ratio is not None else 0,
                                "", 1, "from the with phase's ratio interval"),
            model, Value(f"{STUDY}.predict.lvmthin_copies_explain_after", text=verdict)]


def _explains(after: Value, model: Value) -> str:
    """A model of LVM thin's loss after lvremove on an untiered pool (the two-region layout's span model; the copy
    load), as a prediction the measurement can refute: 'holds' when the model's interval (the span model's range
    over seeds; the copy model's from its fitted cost) overlaps the measured after-ratio's interval, 'refuted'
    otherwise, 'n/a' without both."""
    if not (after.has_interval and model.has_interval):
        return "n/a"
    return "holds" if model.low <= after.high and after.low <= model.high else "refuted"


def lvmthin_values(meas: pd.DataFrame, phases: pd.DataFrame, events: pd.DataFrame, speed: pd.DataFrame,
                    learned_fraction: float, read_fraction: float,
                    layout: dict[str, dict[str, Any]], span_model_ios: int) -> list[Value]:
    """The array-native contrast: per pool, the LVM thin timeline's phase IOPS, SSD-served shares and ratios to its
    own initial phase (with intervals), its guest rate against the qcow2 timeline's, how long lvcreate and lvremove
    took; on the tiered pool also the ratios at the SSD tier's speed and whether the learning runs did learn
    (a cycle ended inside and the last run's SSD-served share reached `learned_fraction`); on an untiered pool the
    share of the data remapped under the snapshot, the two-region layout's rate from the pool's own model
    (`layout[variant]`: its span_model and chunk_size; `span_model_ios` requests per loop) and whether it explains the
    loss after lvremove, and per phase the members' time per command, balance and cache hits, the array's time per
    command and mean queue, the device's I/Os per guest I/O and the guest's CPU use. NaN where not measured."""
    k = STUDY
    out: list[Value] = []
    for pool in POOLS:
        variant = lvmthin_variant(pool)
        base = f"{k}.{pool}.{LVM_THIN}"
        for phase in LVM_THIN_PHASES:
            if phase == "relearned" and pool != TIERED:
                continue
            r = phases[(phases.pool == variant) & (phases.phase == phase)] if not phases.empty else phases
            row = r.iloc[0] if len(r) else None
            out.append(Value(f"{base}.{phase}.iops", float(row.iops) if row is not None else math.nan, "IOPS",
                             n=int(row.batches) if row is not None else 0))
            out.append(Value(f"{base}.{phase}.ssd_share", 100 * float(row.ssd_share) if row is not None
                             else math.nan, "%", digits=0))
            if phase != "initial":
                out.append(Value.where_defined(
                    f"{base}.{phase}.ratio", *((float(row.ratio_pct), float(row.ratio_low), float(row.ratio_high),
                                               int(row.n)) if row is not None else (math.nan, math.nan, math.nan, 0)),
                    "%", 1, f"ratio of means of {BATCH_S}-s batches, Welch"))
            # the untiered pool: where the time went; the tiered pool: only the copies (flash-served rates fall short)
            columns = LAYOUT_COLUMNS if pool != TIERED else {"copied_write_pct": LAYOUT_COLUMNS["copied_write_pct"]}
            m_ph = meas[(meas.pool == variant) & (meas.phase == phase)] if not meas.empty else meas
            out += [Value(f"{base}.{phase}.{col}", float(m_ph[col].iloc[0]) if len(m_ph) else math.nan, unit,
                          digits=digits) for col, (unit, digits) in columns.items()]
            if pool == TIERED and phase != "initial":
                s = speed[(speed.pool == variant) & (speed.phase == phase)] if not speed.empty else speed
                out.append(Value.where_defined(
                    f"{base}.{phase}.at_tier_speed", *((float(s.ratio_pct.iloc[0]), float(s.ratio_low.iloc[0]),
                                                       float(s.ratio_high.iloc[0]), int(s.n.iloc[0])) if len(s)
                                                      else (math.nan, math.nan, math.nan, 0)),
                    "%", 1, "fitted τ_hdd's interval"))
        q = phases[(phases.pool == pool) & (phases.phase == "initial")] if not phases.empty else phases
        g = phases[(phases.pool == variant) & (phases.phase == "initial")] if not phases.empty else phases
        out.append(Value(f"{base}.over_qcow2_initial", 100 * float(g.iops.iloc[0] / q.iops.iloc[0])
                         if len(q) and len(g) else math.nan, "%", digits=0))
        ev = events[events.pool == variant] if not events.empty else events
        for kind, name in (("snapshot", "snapshot_s"), ("delete", "delete_s")):
            e = ev[ev.event == kind] if not ev.empty else ev
            out.append(Value(f"{base}.{name}", float(e.seconds.iloc[0]) if len(e) else math.nan, "s", digits=2))
        m = meas[meas.pool == variant] if not meas.empty else meas
        steady = m[m.phase.isin(("initial", "settle", "with", "after"))] if not m.empty else m
        out.append(Value(f"{base}.cycles_inside_steady", float(steady.tier_cycles.sum()) if len(m) else math.nan,
                         "", digits=0))
        out.append(Value(f"{base}.worst_lateness_pct", float(m.lateness_pct.max()) if len(m) else math.nan, "%",
                         digits=0))
        if pool != TIERED:
            for phase in ("initial", "after"):    # the qcow2 timeline beside it: its members' read-ahead hits
                q_ph = meas[(meas.pool == pool) & (meas.phase == phase)] if not meas.empty else meas
                out.append(Value(f"{k}.{pool}.{phase}.member_hit_pct", float(q_ph.member_hit_pct.iloc[0])
                                 if len(q_ph) else math.nan, "%", digits=0))
            lay = layout.get(variant, {})
            f = remapped_fraction(meas, variant, float(lay.get("chunk_size") or math.nan))
            out.append(Value(f"{base}.remapped_pct", 100 * f, "%", digits=0))
            curve = lay.get("span_model") or {}
            est, lo, hi = span_model_ratio(curve, f)
            seeds = span_model_seeds(curve)
            out.append(Value(f"{k}.span_model_seeds", float(seeds), "seeds"))
            out.append(Value(f"{k}.span_model_ios", float(span_model_ios) if curve else math.nan, "requests",
                             digits=0))
            model = Value.where_defined(f"{base}.after.span_model_ratio", est, lo, hi, seeds, "%",
                                        1, "the emulated pool's own model (closed loops) of the two-region layout, "
                                        "range over seeds")
            out.append(model)
            after = next((v for v in out if v.key == f"{base}.after.ratio"), None)
            out.append(Value(f"{k}.predict.lvmthin_span_explains_after",
                             text=_explains(after, model) if after is not None else "n/a"))
            with_ratio = next((v for v in out if v.key == f"{base}.with.ratio"), None)
            out += copy_model_values(meas, variant, float(lay.get("chunk_size") or math.nan),
                                     curve, with_ratio, after, base, read_fraction)
        if pool == TIERED:
            out.append(Value(f"{k}.predict.lvmthin_misplacement_stays", text=_stays(phases)))
            for phase in ("learn", "relearn"):
                runs = m[m.phase == phase].sort_values("index") if not m.empty else m
                done = ev[ev.event == f"{phase}_done"] if not ev.empty else ev
                # the host's own decision that ended the loop (measure.LearningGate), its last attempt's; a run
                # without one is refused when it is read (record.upgrade)
                learned = bool(done.learned.iloc[-1]) if len(done) else False
                out.append(Value(f"{base}.{phase}ed", text=("yes" if learned else "no") if len(runs) else "n/a"))
                out.append(Value(f"{base}.{phase}_s", float(runs.t_end_s.max() - runs.t_start_s.min())
                                 if len(runs) else math.nan, "s", digits=0))
    return out
