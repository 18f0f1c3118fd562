"""Analysis of a metadata-cache run: per coverage the loss with one snapshot (neighbouring pairs) and the metadata
reads and writes each guest I/O cost (host counters against fio's I/O counts), the miss and cost models
(snaptax.models.metadata_cache) fitted within their physical bounds with 95 % profile-likelihood intervals, the
coverages in [0, 1] at which the fitted model would lose seed 001's published 65 % (VMFS) and 35 % (vSAN): derived
results, printed as such, not claims; and the models' held-out test (issue 48): fitted without the plan's held-out
coverages, they predict the slowdown there from the coverage alone (values metadata_cache.cost.heldout.*). Pure.

The fits are of the randrw job (the model is of that job). Per job and coverage also the host reads per guest read
with and without the snapshot (<study>.<job>.host_reads_per_read.<variant>.<none|snapshot>); where the run measured
the read job (plan.READ_JOB: the runs measured with it), its loss and metadata reads per coverage, the slices a read
miss read (randread.slices_per_miss, tested against models.metadata_cache.read_host_reads_per_read) and the slices
per write miss they imply for the randrw job beside it (randrw.slices_per_write_miss). Older runs lack those
values; randread.predicted.<variant> (the prediction with one slice per miss) and randread.finding (what the run
says of it, in words, or that it did not measure the read job) are in every run's values, so the paper reads them
whichever run it is built from."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import pandas as pd

from ...analysis import Analysis
from ...errors import AnalysisError
from ...models import heldout as ho, metadata_cache as mc
from ...record import RunRecord
from ...stats import Interval, mean_interval, paired_ratio_interval
from ...values import Value, heldout_values
from .plan import JOB, READ_JOB, STUDY, MetadataCacheParameters, heldout_coverages, variant_name

HOST = ("host.reads", "host.writes")
# Seed 001, Table 1, FIO random I/O: loss with one snapshot. Read here as what our model implies, not judged.
PUBLISHED_LOSS = {"vmfs": 0.65, "vsan": 0.35}


@dataclass
class MetadataCacheAnalysis(Analysis):
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)     # one row per pair: none, one, m, w, slowdown
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)   # one row per coverage, 95 % intervals
    misses: mc.MissFit | None = None
    cost: mc.CostFit | None = None
    implied: pd.DataFrame = field(default_factory=pd.DataFrame)   # coverage implied by each published loss
    heldout: ho.HeldOut | None = None                               # the models' held-out test
    jobs: pd.DataFrame = field(default_factory=pd.DataFrame)      # per job and coverage (job_summary)
    read_pairs: pd.DataFrame = field(default_factory=pd.DataFrame)  # the read job's pairs (none in older runs)

    def fits_table(self) -> pd.DataFrame:
        """The two models' parameters with 95 % intervals."""
        assert self.misses and self.cost
        cost = "none/one = 1 + lambda0 + kappa m^alpha"
        rows = [{"model": "misses m = mu(1 - c)", "parameter": "mu (reads per miss)", "value": round(self.misses.mu, 3),
                 "ci95": f"[{self.misses.ci95[0]:.3f}, {self.misses.ci95[1]:.3f}]", "points": self.misses.points}]
        for name, value, (lo, hi) in zip(("lambda0", "kappa", "alpha"), (self.cost.lambda0, self.cost.kappa,
                                                                         self.cost.alpha), self.cost.ci95, strict=True):
            rows.append({"model": cost, "parameter": name, "value": round(value, 3), "ci95": f"[{lo:.3f}, {hi:.3f}]",
                         "points": self.cost.points})
        return pd.DataFrame(rows)


def measurements(record: RunRecord) -> pd.DataFrame:
    """One row per pair run (of every job: column `job`): variant, coverage (fraction of the L2 tables cached),
    repeat, chain length (0 or 1), IOPS, metadata reads m and writes w per guest I/O ((host − guest) / guest I/Os over
    the run), and host reads per guest read."""
    coverage = record.parameters(MetadataCacheParameters).coverage
    meas = record.per_measurement(counters=HOST)
    meas = meas[meas.phase == "pair"].copy()
    if meas.empty:
        raise AnalysisError(f"{record.path}: no pair measurements")
    ios = meas.read_ios + meas.write_ios
    meas["coverage"] = meas.variant.map(coverage).astype(float)
    meas["m"] = (meas["host.reads"] - meas.read_ios) / ios
    meas["w"] = (meas["host.writes"] - meas.write_ios) / ios
    meas["reads_per_read"] = meas["host.reads"] / meas.read_ios.where(meas.read_ios > 0)
    return meas.reset_index(drop=True)


PAIR_COLUMNS = ("variant", "coverage", "repeat", "iops_none", "iops_one", "slowdown", "m", "w", "m_none", "w_none",
                "reads_per_read", "reads_per_read_none", "read_share")


def pair_table(meas: pd.DataFrame, job: str = JOB) -> pd.DataFrame:
    """One row per pair of `job` (default: the randrw job the models are of): the no-snapshot and one-snapshot IOPS,
    their slowdown (none ÷ one), the metadata reads and writes per guest I/O of the one-snapshot run, and those of the
    no-snapshot run (the control: 0 without a redo log), host reads per guest read of both, and the one-snapshot
    run's read share (reads ÷ guest I/Os). Empty (with these columns) when the run has no pair of `job`."""
    rows = []
    for (variant, rep), g in meas[meas.job == job].groupby(["variant", "repeat"]):
        none, one = g[g.chain_length == 0], g[g.chain_length == 1]
        if len(none) != 1 or len(one) != 1:
            continue
        n, o = none.iloc[0], one.iloc[0]
        rows.append({"variant": variant, "coverage": float(o.coverage), "repeat": int(rep), "iops_none": n.iops,
                     "iops_one": o.iops, "slowdown": n.iops / o.iops, "m": o.m, "w": o.w, "m_none": n.m,
                     "w_none": n.w, "reads_per_read": o.reads_per_read, "reads_per_read_none": n.reads_per_read,
                     "read_share": o.read_ios / (o.read_ios + o.write_ios)})
    return pd.DataFrame(rows, columns=list(PAIR_COLUMNS)).sort_values(["coverage", "repeat"]).reset_index(drop=True)


def summarize(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per coverage: loss with one snapshot (%, paired log-ratio t) and metadata reads/writes per guest I/O (t)."""
    rows = []
    for (variant, cov), g in pairs.groupby(["variant", "coverage"]):
        loss = paired_ratio_interval(g.iops_one.to_numpy(), g.iops_none.to_numpy()).scaled(-100, 100)
        # linear t, not log: m and w are differences (host − guest I/Os per guest I/O), 0 with every table cached and
        # below 0 where the host saw fewer I/Os than the guest
        m, w = mean_interval(g.m.to_numpy()), mean_interval(g.w.to_numpy())
        rows.append({"variant": variant, "coverage": cov, "pairs": loss.n, "loss_pct": loss.estimate,
                     "loss_pct_low": loss.low, "loss_pct_high": loss.high, "m": m.estimate, "m_low": m.low,
                     "m_high": m.high, "w": w.estimate, "w_low": w.low, "w_high": w.high,
                     "m_none": float(g.m_none.abs().max())})
    return pd.DataFrame(rows).sort_values("coverage").reset_index(drop=True)


JOB_COLUMNS = ("job", "variant", "coverage", "pairs", "loss_pct", "loss_pct_low", "loss_pct_high", "m", "m_low",
               "m_high", "reads_per_read_none", "reads_per_read_none_low", "reads_per_read_none_high",
               "reads_per_read", "reads_per_read_low", "reads_per_read_high", "predicted")


def job_summary(meas: pd.DataFrame) -> pd.DataFrame:
    """Per job (randrw, then the read job where the run has it) and coverage: loss with one snapshot (%, paired
    log-ratio t), metadata reads m per guest I/O and host reads per guest read without and with the snapshot (linear
    t: counts per I/O), and for the read job the host reads per guest read one slice per miss predicts
    (models.metadata_cache.read_host_reads_per_read)."""
    rows = []
    for job in (JOB, READ_JOB):
        for (variant, cov), g in pair_table(meas, job).groupby(["variant", "coverage"]):
            loss = paired_ratio_interval(g.iops_one.to_numpy(), g.iops_none.to_numpy()).scaled(-100, 100)
            ivs = {"m": mean_interval(g.m.to_numpy()),
                   "reads_per_read_none": mean_interval(g.reads_per_read_none.to_numpy()),
                   "reads_per_read": mean_interval(g.reads_per_read.to_numpy())}
            row = {"job": job, "variant": variant, "coverage": cov, "pairs": len(g), "loss_pct": loss.estimate,
                   "loss_pct_low": loss.low, "loss_pct_high": loss.high,
                   "predicted": float(mc.read_host_reads_per_read(cov)) if job == READ_JOB else math.nan}
            for name, iv in ivs.items():
                row.update({name: iv.estimate, f"{name}_low": iv.low, f"{name}_high": iv.high})
            rows.append(row)
    rows.sort(key=lambda r: ((JOB, READ_JOB).index(r["job"]), r["coverage"]))
    return pd.DataFrame(rows, columns=list(JOB_COLUMNS))


def read_slices(read_pairs: pd.DataFrame) -> Interval:
    """The slices a read miss read (models.metadata_cache.read_slices_per_miss of each read-job pair's one-snapshot
    run below full coverage), mean with a linear t interval over those pairs (a count per I/O)."""
    below = read_pairs[read_pairs.coverage < 1]
    if below.empty:
        return mean_interval([])
    return mean_interval(mc.read_slices_per_miss(below.reads_per_read.to_numpy(), below.coverage.to_numpy()))


def write_slices(pairs: pd.DataFrame, read_pairs: pd.DataFrame) -> Interval:
    """The slices a write miss of the randrw job read, given the read job's slices per read miss: per repeat, at
    each coverage below 1 that has both jobs' pairs, the randrw pair's m and read share with the read-job pair of
    the same repeat (its neighbour in time) through models.metadata_cache.write_slices_per_miss; mean with a linear
    t interval over those repeats."""
    both = pairs.merge(read_pairs, on=["variant", "coverage", "repeat"], suffixes=("", "_read"))
    both = both[both.coverage < 1]
    if both.empty:
        return mean_interval([])
    s_read = mc.read_slices_per_miss(both.reads_per_read_read.to_numpy(), both.coverage.to_numpy())
    return mean_interval(mc.write_slices_per_miss(both.m.to_numpy(), both.coverage.to_numpy(),
                                                  both.read_share.to_numpy(), s_read))


def coverage_words(c: float) -> str:
    """A coverage as the paper's words say it: 'every table cached', '1/8 of the tables cached'."""
    if c >= 1:
        return "every table cached"
    f = Fraction(c).limit_denominator(64)
    shown = f"{f.numerator}/{f.denominator}" if abs(float(f) - c) < 1e-9 else f"{c:.3f}"
    return f"{shown} of the tables cached"


def against(a: Value, b: Value) -> str:
    """Where a's 95 % interval lies against b's, in words: 'lies below', 'lies above', 'overlaps' (or 'has no
    interval to set against' when either lacks one)."""
    if not (a.has_interval and b.has_interval):
        return "has no interval to set against"
    if a.high < b.low:
        return "lies below"
    return "lies above" if a.low > b.high else "overlaps"


def read_finding(values: dict[str, Value], jobs: pd.DataFrame, runtime_s: float | None) -> str:
    """What the run says of the read job's prediction, in plain sentences for the paper (numbers as \\valci prints
    them, each direction read from the intervals), or that the run did not measure the read job. jobs: job_summary's
    table; runtime_s: the read job's runs' length (None: not recorded)."""
    k, rd = STUDY, f"{STUDY}.{READ_JOB}"
    read = jobs[jobs.job == READ_JOB]
    if read.empty:
        return ("This run predates the read job (it measured the random job only), so it does not test the "
                "prediction.")
    covs = [coverage_words(c) for c in read.coverage]
    lo, hi = int(read.pairs.min()), int(read.pairs.max())
    pairs = f"{lo} pairs" if lo == hi else f"{lo} to {hi} pairs"
    runs = f"{pairs} of {runtime_s:g}-s runs each" if runtime_s else f"{pairs} each"
    out = [f"In this run the read job was measured with {' and with '.join(covs)} ({runs})."]
    for r in read.itertuples(index=False):
        hrpr = f"{rd}.host_reads_per_read.{r.variant}"
        out.append(f"With {coverage_words(r.coverage)} its guest reads cost "
                   f"{values[f'{hrpr}.snapshot'].formatted_ci()} host reads with the snapshot "
                   f"({values[f'{hrpr}.none'].formatted_ci()} without it; one slice per miss predicts "
                   f"{values[f'{rd}.predicted.{r.variant}'].formatted()}).")
    s_read = values.get(f"{rd}.slices_per_miss")
    if s_read is not None:
        mu = values[f"{k}.fit.mu"]
        one = f"an interval that {s_read.side_of(1.0)}" if s_read.has_interval else "without an interval"
        out.append(f"That is {s_read.formatted_ci()} slices per read miss, {one} (one slice per miss) and "
                   f"{against(s_read, mu)} the random job's {mu.formatted_ci()} per lookup miss of its reads and "
                   "writes together (the miss model's fit).")
        s_write = values.get(f"{k}.{JOB}.slices_per_write_miss")
        if s_write is not None:
            out.append(f"If its reads miss as the read job's do, the random job's write misses read "
                       f"{s_write.formatted_ci()} slices each (paired by repeat with the read job's pairs beside "
                       "them).")
    losses = [f"{values[f'{rd}.loss.{r.variant}'].formatted_ci()}\u2009% with {coverage_words(r.coverage)}"
              for r in read.itertuples(index=False)]
    out.append(f"With the snapshot the read job lost {' and '.join(losses)}.")
    return " ".join(out)


def implied_coverage(cost: mc.CostFit, misses: mc.MissFit) -> pd.DataFrame:
    """The coverage in [0, 1] (and metadata reads per I/O) at which the fitted model loses each published loss,
    with its 95 % profile-likelihood interval; reachable False (nan coverage) when no coverage in [0, 1] is."""
    rows = []
    for name, loss in PUBLISHED_LOSS.items():
        c = mc.implied_coverage(loss, cost, misses)
        rows.append({"stand_for": name, "published_loss_pct": 100 * loss,
                     "reads_per_io": misses.mu * (1 - c.coverage), "coverage": c.coverage,
                     "coverage_low": c.low, "coverage_high": c.high, "reachable": c.reachable})
    return pd.DataFrame(rows)


PREDICTS = "the slowdown (IOPS with no snapshot / with one) at a cache coverage, from the coverage alone"


def heldout_test(record: RunRecord, pairs: pd.DataFrame, summary: pd.DataFrame) -> ho.HeldOut:
    """The miss and cost models fitted on the pairs of every coverage but the plan's held-out ones
    (plan.heldout_coverages), predicting the slowdown at each held-out coverage c at m = μ(1 − c) with its profile
    interval, against the slowdown measured there (1 ÷ (1 − loss), its paired log-ratio interval over the pairs)."""
    held = {variant_name(c) for c in heldout_coverages(record.parameters(MetadataCacheParameters).scale.coverages)}
    fit = pairs[~pairs.variant.isin(held)]
    if not held:
        return ho.judge([], len(fit), PREDICTS, not_tested="the profile measures too few coverages to hold two out")
    try:
        misses = mc.fit_misses(fit.coverage.to_numpy(), fit.m.to_numpy())
        cost = mc.fit_cost(fit.m.to_numpy(), fit.slowdown.to_numpy())
    except ValueError as e:      # reported as the verdict's reason, not swallowed: the models could not be tested
        return ho.judge([], len(fit), PREDICTS, not_tested=f"the fit without the held-out coverages failed: {e}")
    points = []
    for r in summary[summary.variant.isin(held)].itertuples(index=False):
        s, lo, hi = cost.slowdown_interval(misses.mu * (1 - float(r.coverage)))
        measured = [1 / (1 - x / 100) for x in (r.loss_pct, r.loss_pct_low, r.loss_pct_high)]
        points.append(ho.point(str(r.variant), s, lo, hi, cost.dof, measured[0], measured[1], measured[2],
                               int(r.pairs) - 1, int(r.pairs)))
    return ho.judge(points, len(fit), PREDICTS)


def _iv(key: str, est: float, low: float, high: float, n: int, unit: str, digits: int, method: str) -> Value:
    return Value.where_defined(f"{STUDY}.{key}", est, low, high, n, unit, digits, method)


def _values(record: RunRecord, summary: pd.DataFrame, pairs: pd.DataFrame, misses: mc.MissFit,
            cost: mc.CostFit, implied: pd.DataFrame, heldout: ho.HeldOut) -> list[Value]:
    k = STUDY
    p = record.parameters(MetadataCacheParameters)
    out = [Value(f"{k}.pairs", float(p.scale.pairs), "pairs"), Value(f"{k}.runtime_s", float(p.scale.runtime_s), "s"),
           Value(f"{k}.coverages", float(len(summary)), "coverages"),
           Value(f"{k}.l2_total_kib", p.l2_total_bytes / 1024, "KiB"),
           Value(f"{k}.slice_kib", p.slice_bytes / 1024, "KiB"),
           Value(f"{k}.control_reads_per_io", float(pairs.m_none.abs().max()), "", digits=4)]
    for r in summary.itertuples(index=False):
        v = r.variant
        out += [_iv(f"loss.{v}", r.loss_pct, r.loss_pct_low, r.loss_pct_high, int(r.pairs), "%", 0,
                    "paired log-ratio t"),
                _iv(f"reads_per_io.{v}", r.m, r.m_low, r.m_high, int(r.pairs), "", 2, "t"),
                _iv(f"writes_per_io.{v}", r.w, r.w_low, r.w_high, int(r.pairs), "", 2, "t"),
                Value(f"{k}.coverage.{v}", r.coverage, "", digits=3)]
    (llo, lhi), (klo, khi), (alo, ahi) = cost.ci95
    profile = "bounded least squares, profile likelihood"
    out += [Value(f"{k}.fit.mu", misses.mu, "", misses.ci95[0], misses.ci95[1], misses.points, 2, None,
                  "least squares through the origin (mu >= 0), t"),
            Value(f"{k}.fit.lambda0", cost.lambda0, "", llo, lhi, cost.points, 2, None, profile),
            Value(f"{k}.fit.kappa", cost.kappa, "", klo, khi, cost.points, 1, None, profile),
            Value(f"{k}.fit.alpha", cost.alpha, "", alo, ahi, cost.points, 2, None, profile),
            Value(f"{k}.fit.at_bound", text=", ".join(cost.at_bound) or "none"),
            # the cost model's refutable prediction in its simplest reading: a fixed price per miss (α = 1)
            Value(f"{k}.fit.alpha_verdict", text="consistent with" if alo <= 1 <= ahi else "refutes"),
            Value(f"{k}.fit.alpha_vs_one", text=Value(f"{k}.fit.alpha", cost.alpha, "", alo, ahi).side_of(1.0)),
            Value(f"{k}.fit.r2", cost.r2, "", digits=3),
            Value(f"{k}.fit.points", float(cost.points), "pairs"),
            Value(f"{k}.fit.floor_loss", 100 * float(mc.loss(0.0, cost.lambda0, cost.kappa, cost.alpha)), "%",
                  digits=0),
            # the miss model's refutable prediction: one slice read per miss (μ = 1)
            Value(f"{k}.fit.mu_verdict", text="consistent with" if misses.ci95[0] <= 1 <= misses.ci95[1]
                  else "refutes")]
    for r in implied.itertuples(index=False):
        out += [Value(f"{k}.implied.{r.stand_for}.coverage", r.coverage, "", r.coverage_low, r.coverage_high,
                      cost.points, 2, None, "cost model constrained to the loss, profile likelihood in [0, 1]"),
                Value(f"{k}.implied.{r.stand_for}.reachable", text="yes" if r.reachable else
                      "no coverage in [0, 1]"),
                Value(f"{k}.implied.{r.stand_for}.reads_per_io", r.reads_per_io, "", digits=2),
                Value(f"{k}.implied.{r.stand_for}.published_pct", r.published_loss_pct, "%", digits=0,
                      text=None)]
    out += heldout_values(f"{k}.cost.heldout", heldout)
    return out


def _job_values(record: RunRecord, summary: pd.DataFrame, jobs: pd.DataFrame, pairs: pd.DataFrame,
                read_pairs: pd.DataFrame, mu: Value) -> list[Value]:
    """Host reads per guest read per job and coverage; the read job's loss, metadata reads, slices per miss and the
    slices per write miss they imply for randrw (where the run has the read job); the prediction per coverage and
    the finding in words (always)."""
    p = record.parameters(MetadataCacheParameters)
    rd = READ_JOB
    out = [Value(f"{STUDY}.l2_tables", float(-(-p.l2_total_bytes // p.cluster_bytes)), "tables")]
    for r in jobs.itertuples(index=False):
        for label, est, lo, hi in (("none", r.reads_per_read_none, r.reads_per_read_none_low,
                                    r.reads_per_read_none_high),
                                   ("snapshot", r.reads_per_read, r.reads_per_read_low, r.reads_per_read_high)):
            out.append(_iv(f"{r.job}.host_reads_per_read.{r.variant}.{label}", est, lo, hi, int(r.pairs), "reads",
                           2, "t"))
        if r.job == READ_JOB:
            out += [_iv(f"{rd}.loss.{r.variant}", r.loss_pct, r.loss_pct_low, r.loss_pct_high, int(r.pairs), "%", 0,
                        "paired log-ratio t"),
                    _iv(f"{rd}.reads_per_io.{r.variant}", r.m, r.m_low, r.m_high, int(r.pairs), "", 2, "t")]
    # the prediction at every coverage the run measured (a model's, from the coverage alone: in every run)
    out += [Value(f"{STUDY}.{rd}.predicted.{r.variant}", float(mc.read_host_reads_per_read(r.coverage)), "reads",
                  digits=2) for r in summary.itertuples(index=False)]
    if not read_pairs.empty:
        out.append(Value(f"{STUDY}.{rd}.pairs", float(p.scale.pairs), "pairs"))
        out.append(Value(f"{STUDY}.{rd}.runtime_s", float(p.scale.read_runtime_s), "s"))
        s_read = read_slices(read_pairs)
        if s_read.n:
            out.append(_iv(f"{rd}.slices_per_miss", s_read.estimate, s_read.low, s_read.high, s_read.n, "slices", 2,
                           "t"))
            s_write = write_slices(pairs, read_pairs)
            if s_write.n:
                out.append(_iv(f"{JOB}.slices_per_write_miss", s_write.estimate, s_write.low, s_write.high,
                               s_write.n, "slices", 2, "t (paired by repeat with the read job)"))
    have = {v.key: v for v in out} | {mu.key: mu}
    read_runtime = p.scale.read_runtime_s if p.scale.read_coverages else None
    out.append(Value(f"{STUDY}.{rd}.finding", text=read_finding(have, jobs, read_runtime)))
    return out


def analyse(record: RunRecord) -> MetadataCacheAnalysis:
    meas = measurements(record)
    pairs = pair_table(meas)
    summary = summarize(pairs)
    misses = mc.fit_misses(pairs.coverage.to_numpy(), pairs.m.to_numpy())
    cost = mc.fit_cost(pairs.m.to_numpy(), pairs.slowdown.to_numpy())
    implied = implied_coverage(cost, misses)
    heldout = heldout_test(record, pairs, summary)
    values = _values(record, summary, pairs, misses, cost, implied, heldout)
    jobs, read_pairs = job_summary(meas), pair_table(meas, READ_JOB)
    mu = next(v for v in values if v.key == f"{STUDY}.fit.mu")
    values += _job_values(record, summary, jobs, pairs, read_pairs, mu)
    return MetadataCacheAnalysis(record, values, [], pairs, summary, misses, cost, implied, heldout, jobs, read_pairs)


__all__ = ["MetadataCacheAnalysis", "analyse", "measurements", "pair_table", "summarize", "job_summary",
           "read_slices", "write_slices", "coverage_words", "against", "read_finding", "implied_coverage",
           "heldout_test", "PUBLISHED_LOSS", "PAIR_COLUMNS", "JOB_COLUMNS"]
