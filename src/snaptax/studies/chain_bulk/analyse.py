"""Analysis of a chain-bulk run: 512 KiB sequential IOPS and clone time per configuration and chain length, their
ratios to no snapshot with 95 % intervals, the per-snapshot changes the seed quotes, the chain model fitted to
each, and the verdicts on seed 001's large-I/O and clone claims. Pure: a run in, tables and values out.

The claims' values are estimates over the independent replicates (plan: a fresh engine, volume and control
each): per replicate one log ratio per chain length (the mean over that replicate's pairs of log(chain ÷
control)), then a t pivot over the replicates (replicate_estimates). The tables and figures pool every pair of
every replicate at a length, with the pooled spread (noise) as their interval; a run of one replicate (those before
2026-11-28, and smoke) gives its claims' values that way, as samples within one run, which are not judged."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

from ...analysis import Analysis
from ...claims import Claim, outcome
from ...inference import Estimate, Scale, log_estimate
from ...models import chain as chain_model
from ...plan import with_replicates
from ...record import RunRecord
from ...stats import CONFIDENCE, REPEATS_MAX, Interval, pooled_log_ratio_interval, pooled_log_sd, repeats_for
from ...values import Value
from ..seed001_standins import operating_point_values
from .plan import FLAT_SUFFIX, KINDS, SCALES, STUDY, ChainBulkParameters

CITE = "setty2021"
STAND_IN = {"on-disk-metadata": "VMFS", "in-memory-metadata": "vSAN"}
SERIES = (*KINDS, "clone")          # what is measured at each chain length
LARGE_IO = "Workloads with large I/O sizes, figures 7 and 8"
CLONE = "Impact on VM clone performance, figure 9"
LOSS_TOLERANCE_PP = 15.0
LOSS_BASIS = ("a judgment, as for Table 1's losses: the text gives rounded percentages for products we only stand "
              "in for; ±15 pp separates 'no drop', 'a third' and 'two thirds'")
STEP_BASIS = ("a judgment: the text's average per further snapshot; ±3 pp separates 'a few per cent per snapshot' "
              "from none and from about a tenth")
CLONE_BASIS = ("a judgment: figure 9's bars, read to about a tenth of the no-snapshot clone time; ±10 pp separates "
               "'+25 %' from none and '+100 %' from '+75 %'")


@dataclass
class BulkAnalysis(Analysis):
    points: pd.DataFrame = field(default_factory=pd.DataFrame)    # one row per fio run or clone
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)   # one row per (variant, series, chain length)
    fits: dict[tuple[str, str], chain_model.ChainFit] = field(default_factory=dict)

    def fits_table(self) -> pd.DataFrame:
        """The chain model per configuration and series, each parameter relative to τ0 (%) with its interval."""
        rows = []
        for (variant, series), f in sorted(self.fits.items()):
            (l0, h0), (l1, h1), (ll, hl) = f.ci95
            rows.append({"variant": variant, "series": series, "tau0": f.tau0_us, "tau0_low": l0, "tau0_high": h0,
                         "first_pct": 100 * f.tau1_us / f.tau0_us, "first_low": 100 * l1 / f.tau0_us,
                         "first_high": 100 * h1 / f.tau0_us, "layer_pct": 100 * f.tau_layer_us / f.tau0_us,
                         "layer_low": 100 * ll / f.tau0_us, "layer_high": 100 * hl / f.tau0_us,
                         "r2": f.r2, "points": f.points})
        return pd.DataFrame(rows)


def points(record: RunRecord) -> pd.DataFrame:
    """One row per measured point: variant, replicate, series (read/write/clone), target (live chain or flat
    control), chain_length, repeat, and its rate — IOPS of the fio run, or clones per second (1 / the clone's
    seconds) — so all three are 'higher is better'."""
    meas = record.per_measurement()
    meas = meas[meas.phase.isin([*KINDS, *(k + FLAT_SUFFIX for k in KINDS)])]
    rows = [{"variant": r.variant, "series": r.phase.removesuffix(FLAT_SUFFIX),
             "target": "flat" if r.phase.endswith(FLAT_SUFFIX) else "live", "chain_length": int(r.chain_length),
             "repeat": int(r.repeat), "rate": float(r.iops), "seconds": math.nan} for r in meas.itertuples()]
    rows += [{"variant": e["variant"], "series": "clone", "target": e.get("target", "live"),
              "chain_length": int(e["chain_length"]), "repeat": int(e["repeat"]), "rate": 1.0 / float(e["seconds"]),
              "seconds": float(e["seconds"])}
             for e in record.manifest.events if e.get("event") == "clone"]
    frame = pd.DataFrame(rows, columns=["variant", "series", "target", "chain_length", "repeat", "rate", "seconds"])
    return with_replicates(frame).drop(columns="recorded_variant")


def paired(pts: pd.DataFrame) -> pd.DataFrame:
    """Chain ÷ flat control per (variant, series, chain length, replicate, repeat): the two runs were neighbours in
    time, so the host disk's drift, which both see, cancels in the ratio. Columns: live, flat (rates), log_ratio."""
    wide = pts.pivot_table(index=["variant", "series", "chain_length", "replicate", "repeat"], columns="target",
                           values="rate", aggfunc="first").dropna().reset_index()
    wide.columns.name = None
    wide["log_ratio"] = np.log(wide["live"] / wide["flat"])
    return wide


Noise = dict[tuple[str, str], tuple[float, int]]


def noise(pr: pd.DataFrame) -> Noise:
    """Per (variant, series): the spread of log(chain ÷ control) between the pairs at each chain length, pooled
    over the sweep (stats.pooled_log_sd on the ratios), and its degrees of freedom."""
    return {(v, s): pooled_log_sd([np.exp(g.log_ratio.to_numpy()) for _, g in gs.groupby("chain_length")])
            for (v, s), gs in pr.groupby(["variant", "series"])}


def _ratios(pr: pd.DataFrame, variant: str, series: str, n: int) -> np.ndarray:
    sel = pr[(pr.variant == variant) & (pr.series == series) & (pr.chain_length == n)]
    return np.exp(sel.log_ratio.to_numpy())


def relative(pr: pd.DataFrame, nz: Noise, variant: str, series: str, n: int, since: int = 0) -> Interval:
    """(chain ÷ control at n) ÷ (chain ÷ control at `since`): the chain's rate at n against its rate at `since`
    with the device's drift taken out, pooled-noise interval (stats.pooled_log_ratio_interval)."""
    sd, dof = nz[(variant, series)]
    return pooled_log_ratio_interval(_ratios(pr, variant, series, n), _ratios(pr, variant, series, since), sd, dof)


def against_control(pr: pd.DataFrame, nz: Noise, variant: str, series: str, n: int) -> Interval:
    """Chain ÷ control at chain length n (geometric mean over the pairs, pooled-noise interval). At n = 0 both
    are unsnapshotted volumes on the same device: the check that the two are alike."""
    sd, dof = nz[(variant, series)]
    logs = np.log(_ratios(pr, variant, series, n))
    if not len(logs):
        return Interval(math.nan, math.nan, math.nan, 0, "pooled t")
    mean = float(logs.mean())
    if dof < 1:
        return Interval(math.exp(mean), math.nan, math.nan, len(logs), "pooled t")
    half = float(sps.t.ppf(0.5 + CONFIDENCE / 2, dof)) * sd / math.sqrt(len(logs))
    return Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs), "pooled t")


def summarize(pts: pd.DataFrame, pr: pd.DataFrame, nz: Noise) -> pd.DataFrame:
    """Per (variant, series, n): geometric-mean rates of chain and control, chain ÷ control, and the chain's rate
    relative to n = 0 (both ratios with pooled-noise 95 % intervals)."""
    rows = []
    for (variant, series, n), g in pr.groupby(["variant", "series", "chain_length"]):
        ctl, rel = against_control(pr, nz, variant, series, int(n)), relative(pr, nz, variant, series, int(n))
        rows.append({"variant": variant, "series": series, "chain_length": int(n), "n": len(g),
                     "live": float(np.exp(np.log(g.live).mean())), "flat": float(np.exp(np.log(g.flat).mean())),
                     "vs_flat": ctl.estimate, "vs_flat_low": ctl.low, "vs_flat_high": ctl.high,
                     "ratio": rel.estimate, "ratio_low": rel.low, "ratio_high": rel.high})
    return pd.DataFrame(rows)


def change_pct(pr: pd.DataFrame, nz: Noise, variant: str, series: str, n: int, since: int = 0) -> Interval:
    """Change of the chain's rate at n against n = `since`, in %: 100 (relative − 1). A loss is its negative."""
    return relative(pr, nz, variant, series, n, since).scaled(100, -100)


def time_change_pct(pr: pd.DataFrame, nz: Noise, variant: str, n: int, since: int = 0) -> Interval:
    """Change of the clone time at n against n = `since`, in %: 100 (T_n/T_since − 1), T = 1/rate (the ratio of
    times is the inverse of the ratio of rates; its interval ends swap)."""
    r = relative(pr, nz, variant, "clone", n, since)
    return Interval(1 / r.estimate, 1 / r.high, 1 / r.low, r.n, r.method).scaled(100, -100)


def per_step_pct(iv_change_pct: Interval, steps: int) -> Interval:
    """An overall change of c % over `steps` snapshots as the average (geometric) change per snapshot:
    100 ((1 + c/100)^(1/steps) − 1) %, applied to the estimate and both interval ends (monotonic)."""
    def f(c: float) -> float:
        return 100 * ((1 + c / 100) ** (1 / steps) - 1) if math.isfinite(c) and c > -100 else math.nan
    return Interval(f(iv_change_pct.estimate), f(iv_change_pct.low), f(iv_change_pct.high), iv_change_pct.n,
                    iv_change_pct.method + ", per snapshot")


def fit_all(pr: pd.DataFrame) -> dict[tuple[str, str], chain_model.ChainFit]:
    """The chain service-time model τ(n) = τ0 + τ1[n ≥ 1] + τL·max(n − 1, 0) per configuration and series, on
    the time per operation (µs per 512 KiB I/O aggregate, or µs per clone) of the chain with the drift taken out:
    each pair's chain ÷ control times the control's geometric-mean rate over the sweep."""
    out = {}
    for (v, s), g in pr.groupby(["variant", "series"]):
        level = float(np.exp(np.log(g.flat).mean()))
        out[(v, s)] = chain_model.fit(g.chain_length.to_numpy(), level * np.exp(g.log_ratio.to_numpy()))
    return out


Key = tuple[str, str]       # (variant, value name), e.g. ("on-disk-metadata", "read_loss.n1")


def replicate_estimates(pr: pd.DataFrame, top: int) -> dict[Key, Estimate]:
    """The claims' values over the independent replicates. Per replicate r and chain length n, L_r(n) is the mean
    over r's pairs of log(chain ÷ control); then, per configuration, a t pivot over the replicates of:
      <kind>_loss.n1, .n2             L_r(n) − L_r(0), a loss in % (loss_log);
      <kind>_per_snapshot_after2      (L_r(top) − L_r(2)) / (top − 2), a change per snapshot in % (chg_log);
      clone_first_pct                 L_r(0) − L_r(1): the clone's time, not its rate, grows (chg_log);
      clone_per_snapshot_after1       (L_r(1) − L_r(top)) / (top − 1) (chg_log);
      large_loss.n1                   the read and the write job together, the mean of their L_r(1) − L_r(0) (Table
                                      1's "FIO (large sequential I/O)": the seed's table does not split them; loss_log).
    A replicate missing a length it needs is left out of that value."""
    level = pr.groupby(["variant", "series", "replicate", "chain_length"]).log_ratio.mean()
    out: dict[Key, Estimate] = {}

    def per_replicate(variant: str, series: str, weights: dict[int, float]) -> dict[int, float]:
        xs = {}
        for r in sorted(set(pr.replicate[(pr.variant == variant) & (pr.series == series)])):
            try:
                xs[r] = sum(w * float(level.loc[(variant, series, r, n)]) for n, w in weights.items())
            except KeyError:
                continue
        return xs

    def put(variant: str, name: str, series: str, weights: dict[int, float], scale: Scale) -> None:
        xs = per_replicate(variant, series, weights)
        if xs:
            out[(variant, name)] = log_estimate(list(xs.values()), scale)

    for variant in sorted(set(pr.variant)):
        for kind in KINDS:
            for n in (1, 2):
                put(variant, f"{kind}_loss.n{n}", kind, {n: 1.0, 0: -1.0}, "loss_log")
            if top > 2:
                put(variant, f"{kind}_per_snapshot_after2", kind, {top: 1 / (top - 2), 2: -1 / (top - 2)}, "chg_log")
        reads, writes = (per_replicate(variant, kind, {1: 1.0, 0: -1.0}) for kind in KINDS)
        if both := sorted(set(reads) & set(writes)):
            out[(variant, "large_loss.n1")] = log_estimate([(reads[r] + writes[r]) / 2 for r in both], "loss_log")
        put(variant, "clone_first_pct", "clone", {0: 1.0, 1: -1.0}, "chg_log")
        if top > 1:
            put(variant, "clone_per_snapshot_after1", "clone", {1: 1 / (top - 1), top: -1 / (top - 1)}, "chg_log")
    return out


def _claim_value(reps: dict[Key, Estimate], variant: str, name: str, pooled: Interval, digits: int = 0) -> Value:
    """`<study>.<variant>.<name>` (in %) over the replicates when there are two or more, else (one replicate: runs
    before replicates, smoke) the pooled interval over one run's pairs, which the verdict rule does not judge."""
    key, est = f"{STUDY}.{variant}.{name}", reps.get((variant, name))
    if est is not None and est.n >= 2:
        return Value.of_estimate(key, est, "%", digits)
    return Value.of(key, pooled, "%", digits)


def _runtime_clause(profile: str, runtime_s: float) -> str:
    """The sentence on the run length: a run of the full profile's length says so; a shorter one says it is its
    profile's time budget, beside the full profile's."""
    full = SCALES["full"].runtime_s
    if runtime_s >= full:
        return f"The runs last {runtime_s:g}\u2009s, the full profile's length"
    return (f"The {profile} profile's run length is its time budget's; the full profile's runs last {full:g}\u2009s, "
            f"against {runtime_s:g}\u2009s here")


def _values(record: RunRecord, pts: pd.DataFrame, pr: pd.DataFrame, nz: Noise, summary: pd.DataFrame,
            fits: dict[tuple[str, str], chain_model.ChainFit]) -> list[Value]:
    k, params = STUDY, record.parameters(ChainBulkParameters)
    s = params.scale
    top = s.max_chain
    reps = replicate_estimates(pr, top)
    out = [Value(f"{k}.max_chain", float(top), "snapshots"), Value(f"{k}.runtime_s", float(s.runtime_s), "s"),
           Value(f"{k}.repeats", float(params.repeats), "runs"),
           Value(f"{k}.replicates", float(s.replicates), "replicates"),
           Value(f"{k}.lengths", text=", ".join(map(str, s.measured_lengths()))),
           Value(f"{k}.full_runtime_s", float(SCALES["full"].runtime_s), "s"),     # the full profile's, for comparison
           Value(f"{k}.runtime_clause", text=_runtime_clause(record.manifest.profile.name, s.runtime_s)),
           Value(f"{k}.disk_mib", float(params.disk_bytes) / (1 << 20), "MiB")]
    out += operating_point_values(k, params.operating_points)
    for r in summary.itertuples():
        key = f"{r.variant}.{r.series}.n{r.chain_length}"
        unit, digits = ("IOPS", 0) if r.series in KINDS else ("clones/s", 3)
        out.append(Value(f"{k}.rate.{key}", r.live, unit, n=r.n, digits=digits))
        out.append(Value(f"{k}.rate_flat.{key}", r.flat, unit, n=r.n, digits=digits))
        out.append(Value.where_defined(f"{k}.vs_flat.{key}", r.vs_flat, r.vs_flat_low, r.vs_flat_high, r.n, "", 2,
                                       "pooled t"))
        out.append(Value.where_defined(f"{k}.ratio.{key}", r.ratio, r.ratio_low, r.ratio_high, r.n, "", 2,
                                       "pooled log-ratio t"))
    out.append(Value(f"{k}.pairs_needed_max", float(REPEATS_MAX), "pairs"))
    for variant in sorted(pts.variant.unique()):
        v = f"{k}.{variant}"
        clone0 = pts[(pts.variant == variant) & (pts.series == "clone") & (pts.chain_length == 0)
                     & (pts.target == "live")].seconds
        out.append(Value(f"{v}.clone_s.n0", float(clone0.mean()), "s", n=len(clone0), digits=2))
        for series in SERIES:
            sd, dof = nz[(variant, series)]
            out.append(Value(f"{v}.{series}_noise_pct", 100 * sd, "%", n=dof, digits=0))
            # pairs per chain length a ±15 pp claim would need at this spread: a change between two points is a
            # difference of two means of k log ratios, so its half-width is t·s·√(2/k) (capped at REPEATS_MAX)
            need = repeats_for(sd * math.sqrt(2), LOSS_TOLERANCE_PP / 100) if math.isfinite(sd) else math.nan
            out.append(Value(f"{v}.{series}_pairs_needed", float(need), "pairs"))
        for kind in KINDS:
            for n in (1, 2):
                out.append(_claim_value(reps, variant, f"{kind}_loss.n{n}",
                                        change_pct(pr, nz, variant, kind, n).scaled(-1)))
            out.append(_claim_value(reps, variant, f"{kind}_per_snapshot_after2",
                                    per_step_pct(change_pct(pr, nz, variant, kind, top, since=2), top - 2), 1))
        out.append(_claim_value(reps, variant, "clone_first_pct", time_change_pct(pr, nz, variant, 1)))
        out.append(_claim_value(reps, variant, "clone_per_snapshot_after1",
                                per_step_pct(time_change_pct(pr, nz, variant, top, since=1), top - 1), 1))
        if (large := reps.get((variant, "large_loss.n1"))) is not None:      # over the replicates only
            out.append(Value.of_estimate(f"{k}.{variant}.large_loss.n1", large, "%", 0))
    for (variant, series), f in sorted(fits.items()):
        (l1, h1), (ll, hl) = f.ci95[1], f.ci95[2]
        base = f"{k}.fit.{variant}.{series}"
        out += [Value(f"{base}.first_pct", 100 * f.tau1_us / f.tau0_us, "%", 100 * l1 / f.tau0_us,
                      100 * h1 / f.tau0_us, f.points, 1, None, "least squares, t (τ0 fixed)"),
                Value(f"{base}.layer_pct", 100 * f.tau_layer_us / f.tau0_us, "%", 100 * ll / f.tau0_us,
                      100 * hl / f.tau0_us, f.points, 1, None, "least squares, t (τ0 fixed)"),
                Value(f"{base}.r2", f.r2, "", digits=2)]
    return out


def _claims(variants: set[str]) -> list[Claim]:
    vmfs, vsan = "on-disk-metadata", "in-memory-metadata"
    k = STUDY
    out = []
    if vmfs in variants:
        out += [
            Claim(f"{k}.C001-4a", CITE, LARGE_IO, "VMFS, 512 KiB sequential read: loss with the first two snapshots",
                  33.0, "%", 0.0, LOSS_TOLERANCE_PP, LOSS_BASIS, f"{k}.{vmfs}.read_loss.n2", f"qcow2 {vmfs}"),
            Claim(f"{k}.C001-4b", CITE, LARGE_IO, "VMFS, 512 KiB sequential read: change per further snapshot "
                  "after the first two", -6.0, "%", 0.0, 3.0, STEP_BASIS, f"{k}.{vmfs}.read_per_snapshot_after2",
                  f"qcow2 {vmfs}"),
            Claim(f"{k}.C001-4c", CITE, LARGE_IO, "VMFS, 512 KiB sequential write: loss with the first snapshot",
                  35.0, "%", 0.0, LOSS_TOLERANCE_PP, LOSS_BASIS, f"{k}.{vmfs}.write_loss.n1", f"qcow2 {vmfs}"),
            Claim(f"{k}.table1_large", CITE, "Table 1", "VMFS, FIO large sequential I/O: loss with 1 snapshot (the "
                  "table says 70 %, the text 33 % and 35 %)", 70.0, "%", 0.0, LOSS_TOLERANCE_PP, LOSS_BASIS,
                  f"{k}.{vmfs}.large_loss.n1", f"qcow2 {vmfs}; the 512 KiB read and write jobs together (the mean "
                  "of their log changes)", "70 % loss", label="C001-4f"),
            Claim(f"{k}.C001-7a", CITE, CLONE, "VMFS: clone time increase with the first snapshot", 100.0, "%", 0.0,
                  10.0, CLONE_BASIS, f"{k}.{vmfs}.clone_first_pct", f"qcow2 {vmfs}"),
            Claim(f"{k}.C001-7b", CITE, CLONE, "VMFS: clone time increase per further snapshot", 4.0, "%", 0.0,
                  3.0, STEP_BASIS, f"{k}.{vmfs}.clone_per_snapshot_after1", f"qcow2 {vmfs}")]
    if vsan in variants:
        out += [
            Claim(f"{k}.C001-4d", CITE, LARGE_IO, "vSAN, 512 KiB sequential read: loss with one snapshot", 0.0,
                  "%", 0.0, LOSS_TOLERANCE_PP, LOSS_BASIS, f"{k}.{vsan}.read_loss.n1", f"qcow2 {vsan}", "no drop"),
            Claim(f"{k}.C001-4e", CITE, LARGE_IO, "vSAN, 512 KiB sequential write: loss with one snapshot", 0.0,
                  "%", 0.0, LOSS_TOLERANCE_PP, LOSS_BASIS, f"{k}.{vsan}.write_loss.n1", f"qcow2 {vsan}", "no drop"),
            Claim(f"{k}.C001-7c", CITE, CLONE, "vSAN: clone time increase with the first snapshot", 25.0, "%", 0.0,
                  10.0, CLONE_BASIS, f"{k}.{vsan}.clone_first_pct", f"qcow2 {vsan}"),
            Claim(f"{k}.C001-7d", CITE, CLONE, "vSAN: clone time increase per further snapshot", 6.0, "%", 0.0,
                  3.0, STEP_BASIS, f"{k}.{vsan}.clone_per_snapshot_after1", f"qcow2 {vsan}")]
    return out


def analyse(record: RunRecord) -> BulkAnalysis:
    pts = points(record)
    pr = paired(pts)
    nz = noise(pr)
    summary = summarize(pts, pr, nz)
    fits = fit_all(pr)
    values = _values(record, pts, pr, nz, summary, fits)
    by_key = {v.key: v for v in values}
    outcomes = [outcome(c, by_key) for c in _claims(set(pts.variant))]
    return BulkAnalysis(record, values, outcomes, pts, summary, fits)
