"""Analysis of a chain-length run: loss with one snapshot from neighbouring pairs (over the whole run and in each
second of it), the chain sweep with ratios and 95 % intervals, recovery after deleting, the chain model fit, host
reads per guest read, and the verdicts on seed 001's Table 1, its recovery claim and its chain's growing loss
(growth). Pure: a run in, tables and values out (fio's per-second logs are read through fiologparser on copies in a
temporary directory)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ... import fiolog
from ...analysis import Analysis
from ...claims import Claim, outcome
from ...inference import Estimate, Scale, ratio_estimate
from ...models import chain as chain_model, heldout as ho
from ...plan import split_replicate, with_replicates
from ...record import RunRecord
from ...stats import (
    Interval,
    geometric_mean_interval,
    mean_interval,
    paired_ratio_interval,
    ratio_across_time_interval,
    ratio_of_means_interval,
)
from ...values import Value, heldout_values
from ..seed001_standins import operating_point_values
from .growth import GROWTH_VARIANTS, chain_growth, growth_claims, iops_by_replicate
from .heldout import heldout_tests
from .plan import BEFORE, LOSS_TOLERANCE_PP, LVM_THIN, MIRROR, WORKLOADS, ChainLengthParameters, pairs_needed

STUDY = "chain_length"
HOST_READS, HOST_WRITES = "host.reads", "host.writes"
CHUNKS_BROKEN, GUEST_WRITES = "engine.chunks_broken", "guest.writes"   # LVM thin's own counters (engines.lvmthin)
GUEST_RAW = "guest-raw"      # the same jobs on the TCG guest's flat volume (the LVM thin variant's control)
HOST_BASELINE = "on-disk-metadata"   # the host path the guest's ceiling is set against
# Which of our configurations stands for which of the study's datastores.
STAND_IN = {"on-disk-metadata": "VMFS (SEsparse)", "in-memory-metadata": "vSAN (vSANsparse)",
            LVM_THIN: "vVOL (array-native)"}
# The seed claims (as issue 13 numbers them) each configuration's rows test: C001-1 VMFS, C001-2 vSAN, C001-3 vVOL;
# C001-5 the recovery as snapshots are deleted, for every datastore.
SEED_CLAIM = {"on-disk-metadata": "C001-1", "in-memory-metadata": "C001-2", LVM_THIN: "C001-3"}
RECOVERY_CLAIM = "C001-5"
ENGINE_WORDS = {"on-disk-metadata": "qcow2 on-disk-metadata", "in-memory-metadata": "qcow2 in-memory-metadata",
                LVM_THIN: "LVM thin, 64 KiB chunks (TCG guest)"}
JOB_WORDS = {"randrw": "random I/O", "readwrite": "sequential I/O", MIRROR: "16 KiB 50 % random I/O"}

# Seed 001, Table 1 ("Guest performance loss with 1 snapshot"), FIO columns; 'No impact' read as 0 % loss.
PUBLISHED_LOSS = {
    ("on-disk-metadata", "randrw"): 65.0, ("on-disk-metadata", "readwrite"): 65.0,
    ("in-memory-metadata", "randrw"): 35.0, ("in-memory-metadata", "readwrite"): 0.0,
    (LVM_THIN, "randrw"): 0.0, (LVM_THIN, "readwrite"): 0.0,
}
# Seed 001, section "Snapshot chain" (figures 1-4): vVOL's degradation with chains up to 12 is "nearly zero"; judged
# at the longest chain we measure, against the no-snapshot runs.
CHAIN_PUBLISHED = {LVM_THIN: "nearly zero"}
# Seed 001, Summary ("Guest performance"): "as much as 85% reduction in guest IOPS when using a VMFS datastore" —
# the largest loss the seed saw; judged on our largest FIO loss at the longest chain of the redo log with on-disk
# metadata (chain_end_loss_max), the point where it is largest when degradation grows with the chain.
LARGEST_LOSS_PUBLISHED = {"on-disk-metadata": 85.0}
LOSS_BASIS = ("a judgment, not derived from data: Table 1 gives single values in steps of 5 % for products we can "
              "only stand in for; ±15 pp separates 'no impact', 'a third' and 'two thirds'")
RECOVERY_TOLERANCE_PP = 10.0
RECOVERY_BASIS = ("a judgment: the seed reports recovery in words ('similar to what it was', figure 6) without "
                  "numbers; ±10 pp is the smallest step its bar chart would make visible")

Key = tuple[str, str]   # (variant, job)


@dataclass
class ChainAnalysis(Analysis):
    meas: pd.DataFrame = field(default_factory=pd.DataFrame)       # one row per fio run (pair/create/delete)
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)    # one row per sweep point, ratios with 95 % CI
    pairs: dict[Key, Interval] = field(default_factory=dict)       # one snapshot ÷ none, neighbouring pairs
    recovery: dict[Key, Interval] = field(default_factory=dict)    # after all deletes ÷ before the sweep
    mirror: dict[Key, Interval] = field(default_factory=dict)      # deleting ÷ creating at the same chain length
    fits: dict[Key, chain_model.ChainFit] = field(default_factory=dict)
    guest: dict[str, dict[str, Interval]] = field(default_factory=dict)   # guest_ceiling(meas)
    by_second: dict[Key, list[Interval]] = field(default_factory=dict)   # one ÷ none in seconds 1..K of the pairs
    settling: dict[Key, Interval] = field(default_factory=dict)          # last second's one ÷ none ÷ the first's
    heldout: dict[Key, ho.HeldOut] = field(default_factory=dict)         # the chain model's held-out tests
    estimates: dict[str, dict[Key, Estimate]] = field(default_factory=dict)   # replicate_estimates(meas, sw)

    def loss_table(self) -> pd.DataFrame:
        """Loss with one snapshot (%), 95 % interval over the replicates, per configuration and job."""
        return loss_table(self.estimates.get("loss", {}), self.pairs)

    def by_second_table(self) -> pd.DataFrame:
        """Loss with one snapshot (%) in each second of the pairs' runs, 95 % interval, per configuration and job."""
        return by_second_table(self.by_second)

    def guest_table(self) -> pd.DataFrame:
        """The TCG guest's ceiling per job (guest_ceiling): the flat volume's IOPS, thin ÷ flat and guest ÷ host (%),
        each with its 95 % interval."""
        rows = []
        for job, ivs in sorted(self.guest.items()):
            raw, thin, host = ivs["raw"], ivs["thin_over_raw"].scaled(100), ivs["guest_over_host"].scaled(100)
            rows.append({"job": job, "flat_iops": round(raw.estimate),
                         "flat_iops_ci95": f"[{raw.low:.0f}, {raw.high:.0f}]",
                         "thin_over_flat_pct": round(thin.estimate, 1),
                         "thin_over_flat_ci95": f"[{thin.low:.1f}, {thin.high:.1f}]",
                         "guest_over_host_pct": round(host.estimate, 1),
                         "guest_over_host_ci95": f"[{host.low:.1f}, {host.high:.1f}]", "runs": raw.n})
        return pd.DataFrame(rows)

    def fits_table(self) -> pd.DataFrame:
        """The chain model's parameters (µs per I/O, aggregate) with 95 % confidence intervals."""
        rows = []
        for (variant, job), f in sorted(self.fits.items()):
            row: dict = {"variant": variant, "job": job, "r2": round(f.r2, 3), "points": f.points}
            for p, (lo, hi) in zip(("tau0_us", "tau1_us", "tau_layer_us"), f.ci95, strict=False):
                row[p] = round(getattr(f, p), 2)
                row[f"{p}_ci95"] = f"[{lo:.2f}, {hi:.2f}]"
            rows.append(row)
        return pd.DataFrame(rows)

    def host_reads_table(self) -> pd.DataFrame:
        """Host-level reads per guest read (random job), mean per configuration, phase and chain length."""
        m = self.meas[self.meas.job == "randrw"]
        return (m.groupby(["variant", "phase", "chain_length"])["host_reads_per_vm_read"].mean()
                .round(2).unstack("chain_length"))


def per_measurement(record: RunRecord) -> pd.DataFrame:
    """One row per fio run of the phases the analysis reads, with its configuration (`variant`), its replicate and
    the variant's name as recorded (plan.with_replicates), and the host's I/Os per guest I/O."""
    meas = with_replicates(record.per_measurement(counters=(HOST_READS, HOST_WRITES, CHUNKS_BROKEN, GUEST_WRITES)))
    meas = meas[meas.phase.isin(["pair", BEFORE, "create", "delete", GUEST_RAW])].copy()
    meas["host_reads_per_vm_read"] = meas[HOST_READS] / meas["read_ios"].where(meas["read_ios"] > 0)
    meas["host_writes_per_vm_write"] = meas[HOST_WRITES] / meas["write_ios"].where(meas["write_ios"] > 0)
    return meas.reset_index(drop=True)


def before_sweep(meas: pd.DataFrame) -> pd.DataFrame:
    """The no-snapshot runs before the chain sweep — the pairs', the mirror job's beside them (phase 'before'), and
    in runs of the first plan the sweep's own runs at n = 0 — as the sweep's phase 'create' at n = 0."""
    sel = meas.phase.isin(["pair", BEFORE, "create"]) & (meas.chain_length == 0)
    return meas[sel].assign(phase="create")


def sweep(meas: pd.DataFrame) -> pd.DataFrame:
    """The chain sweep: its create and delete runs, with the runs before it as create at n = 0."""
    rest = meas[(meas.phase == "delete") | ((meas.phase == "create") & (meas.chain_length > 0))]
    return pd.concat([before_sweep(meas), rest], ignore_index=True)


def summarize(sw: pd.DataFrame) -> pd.DataFrame:
    """Per point of the chain sweep `sw` (sweep(meas); variant, job, phase create/delete, chain length): IOPS, the
    geometric mean of the point's runs with its log-t interval (stats.geometric_mean_interval; iops_method says
    which rule it got), and the ratio to the no-snapshot runs before the sweep with its interval (ratio of
    means)."""
    rows = []
    base = sw[(sw.phase == "create") & (sw.chain_length == 0)]
    for (variant, job, phase, n), g in sw.groupby(["variant", "job", "phase", "chain_length"]):
        b = base[(base.variant == variant) & (base.job == job)]["iops"].to_numpy()
        iops = geometric_mean_interval(g["iops"].to_numpy())
        ratio = ratio_of_means_interval(g["iops"].to_numpy(), b)
        rows.append({"variant": variant, "job": job, "phase": phase, "chain_length": int(n), "n": iops.n,
                     "iops": iops.estimate, "iops_low": iops.low, "iops_high": iops.high, "iops_method": iops.method,
                     "ratio": ratio.estimate, "ratio_low": ratio.low, "ratio_high": ratio.high})
    return pd.DataFrame(rows)


def _pair_iops(meas: pd.DataFrame, variant: str, job: str, chain_length: int) -> pd.Series:
    """IOPS of the pairs' runs with `chain_length` snapshots (0 or 1), indexed by (replicate, repeat)."""
    sel = (meas.phase == "pair") & (meas.variant == variant) & (meas.job == job) & (meas.chain_length == chain_length)
    return meas[sel].set_index(["replicate", "repeat"])["iops"]


def _pairs(meas: pd.DataFrame, variant: str, job: str) -> tuple[np.ndarray, np.ndarray]:
    """IOPS with one snapshot and with none, matched by repeat (phase 'pair')."""
    none, one = _pair_iops(meas, variant, job, 0), _pair_iops(meas, variant, job, 1)
    common = none.index.intersection(one.index)
    return one.loc[common].to_numpy(), none.loc[common].to_numpy()


def pair_ratios(meas: pd.DataFrame) -> dict[Key, Interval]:
    """One snapshot ÷ none, from the neighbouring pairs of all replicates pooled (the pairs are not independent
    runs: the claims' estimates are over replicates, replicate_estimates), per variant and job."""
    keys = meas[meas.phase == "pair"][["variant", "job"]].drop_duplicates().itertuples(index=False)
    return {(v, j): paired_ratio_interval(*_pairs(meas, v, j)) for v, j in sorted(keys)}


def pair_log_sd(meas: pd.DataFrame, variant: str, job: str) -> float:
    """Sample standard deviation of log(one snapshot ÷ none) over the pairs: the spread the pair count was planned
    for (plan.PAIRS_BASIS)."""
    one, none = _pairs(meas, variant, job)
    logs = np.log(one / none)
    return float(logs.std(ddof=1)) if len(logs) > 1 else float("nan")


def pair_seconds(record: RunRecord, meas: pd.DataFrame) -> dict[Key, tuple[np.ndarray, np.ndarray]]:
    """Per configuration and job of the pairs: IOPS per second (fiolog.run_seconds) of the one-snapshot runs and of
    the no-snapshot runs, two arrays of pairs × K matched by repeat, K the most seconds any run has, nan where a run
    has fewer (none without a second in any run)."""
    paths = record.results().drop_duplicates(["variant", "index"]).set_index(["variant", "index"])["path"]
    pairs = meas[meas.phase == "pair"]
    out = {}
    for (variant, job), g in pairs.groupby(["variant", "job"]):
        runs = {((int(r.replicate), int(r.repeat)), int(r.chain_length)):
                fiolog.run_seconds(record.path / paths[(r.recorded_variant, r.index)] / fiolog.IOPS_LOG)
                for r in g.itertuples()}
        repeats = sorted(r for r, n in runs if n == 0 and (r, 1) in runs)
        k = max((len(runs[(r, n)]) for r in repeats for n in (0, 1)), default=0)
        if k:
            padded = {key: np.pad(s, (0, k - len(s)), constant_values=np.nan) for key, s in runs.items()}
            out[(str(variant), str(job))] = (np.array([padded[(r, 1)] for r in repeats]),
                                             np.array([padded[(r, 0)] for r in repeats]))
    return out


def seconds_kept(one: np.ndarray, none: np.ndarray) -> int:
    """The seconds 1..K of the pairs' runs that the loss by second reports: the last second that at least half of
    the pairs (and at least 2) have in both runs (one, none: pairs × seconds, nan where a run has no whole second).
    A run that has a second has every one before it, so the seconds before K have at least as many pairs; a second
    most pairs lack would stand on the pairs whose jobs all happened to log it, not on the run."""
    have = (np.isfinite(one) & np.isfinite(none)).sum(axis=0)
    ok = np.nonzero(have >= max(2, len(one) / 2))[0]
    return int(ok[-1]) + 1 if len(ok) else 0


def loss_by_second(one: np.ndarray, none: np.ndarray) -> list[Interval]:
    """One snapshot ÷ none in each second k = 1..K of the pairs' runs (K: seconds_kept): stats.paired_ratio_interval
    over the pairs that have second k in both runs, of one[:, k] against none[:, k] (pairs × seconds arrays of IOPS,
    nan where a run has no whole second k), exp(mean_r log(one_rk / none_rk) ± t·s/√n); a ratio (1 = no loss), n
    the pairs it stands on. The loss in % is 100 − 100 × the ratio, as chain_length.loss.*."""
    return [paired_ratio_interval(one[:, k], none[:, k]) for k in range(seconds_kept(one, none))]


def settling_ratio(one: np.ndarray, none: np.ndarray) -> Interval:
    """How a pair's one ÷ none changed from the run's first second to its last (K: seconds_kept), as a paired
    interval over the pairs that have both seconds: exp(mean_r d_r ± t·s_d/√n), d_r = log(one_rK / none_rK) −
    log(one_r1 / none_r1); a ratio of ratios, 1 = the same loss in the last second as in the first, above 1 = the
    loss shrank (as a transient of the fresh overlay, e.g. allocation on first writes, would), below 1 = it grew.
    Pairs with an IOPS ≤ 0 or none in either second are left out; nan without two seconds."""
    k = seconds_kept(one, none)
    if k < 2:
        return Interval(math.nan, math.nan, math.nan, 0, "paired log-ratio t")
    ends = np.stack([one[:, 0], one[:, k - 1], none[:, 0], none[:, k - 1]], axis=1)
    ok = (ends > 0).all(axis=1)   # False for nan
    return paired_ratio_interval(one[ok, k - 1] / none[ok, k - 1], one[ok, 0] / none[ok, 0])


def by_second_table(by_second: dict[Key, list[Interval]]) -> pd.DataFrame:
    """Loss with one snapshot (%) and its 95 % interval per configuration, job and second of the pairs' runs."""
    rows = []
    for (variant, job), ivs in sorted(by_second.items()):
        for second, iv in enumerate(ivs, 1):
            loss = iv.scaled(-100, 100)
            rows.append({"variant": variant, "job": job, "second": second, "loss_pct": round(loss.estimate, 1),
                         "loss_pct_low": round(loss.low, 1), "loss_pct_high": round(loss.high, 1), "pairs": iv.n})
    return pd.DataFrame(rows, columns=["variant", "job", "second", "loss_pct", "loss_pct_low", "loss_pct_high",
                                       "pairs"])


def recovery_ratios(sw: pd.DataFrame) -> dict[Key, Interval]:
    """After all snapshots are deleted ÷ before the sweep: the runs at n = 0 at its end against the no-snapshot
    runs before it. Minutes apart, so drift is not cancelled: the interval takes the spread of the runs before
    (spread over the pairs' minutes) as the spread of the end's runs, which are neighbours and count as one
    (stats.ratio_across_time_interval). `sw`: the chain sweep, sweep(meas)."""
    out = {}
    for (variant, job), g in sw[sw.chain_length == 0].groupby(["variant", "job"]):
        end, start = g[g.phase == "delete"]["iops"], g[g.phase == "create"]["iops"]
        if len(end) and len(start):
            out[(variant, job)] = ratio_across_time_interval(end.to_numpy(), start.to_numpy())
    return out


def mirror_ratios(summary: pd.DataFrame) -> dict[Key, Interval]:
    """Deleting ÷ creating at the same chain length (seed 001: figure 6 'almost a mirror image' of figure 5), per
    variant and job: the geometric mean over the lengths 1 … max_chain − 1, where both phases ran (the longest is
    only created, length 0 is the recovery), with the t interval of the log ratios over those lengths (paired by
    length). `summary`: summarize(sweep(meas))."""
    out = {}
    for (variant, job), g in summary.groupby(["variant", "job"]):
        iops = g.pivot_table(index="chain_length", columns="phase", values="iops")
        if "delete" not in iops or "create" not in iops:
            continue
        both = iops[(iops.index > 0)].dropna(subset=["create", "delete"])
        if len(both):
            out[(variant, job)] = paired_ratio_interval(both["delete"].to_numpy(), both["create"].to_numpy())
    return out


def chain_end_losses(sw: pd.DataFrame) -> dict[Key, Interval]:
    """Loss (%) at the longest chain of the sweep against the no-snapshot runs before it, per variant and job. One
    run minutes after the pairs' spread-out runs: stats.ratio_across_time_interval."""
    out = {}
    for (variant, job), g in sw[sw.phase == "create"].groupby(["variant", "job"]):
        longest = int(g.chain_length.max())
        end, start = g[g.chain_length == longest]["iops"], g[g.chain_length == 0]["iops"]
        if longest > 0 and len(start):
            out[(variant, job)] = ratio_across_time_interval(end.to_numpy(), start.to_numpy()).scaled(-100, 100)
    return out


def guest_ceiling(meas: pd.DataFrame) -> dict[str, dict[str, Interval]]:
    """The TCG guest's own ceiling, per job (empty without guest-raw runs):
      raw           IOPS of the jobs on the guest's flat volume (geometric mean, log-t interval);
      thin_over_raw the LVM thin volume without a snapshot ÷ the flat volume, paired by repeat (neighbours);
      guest_over_host  the flat volume in the guest ÷ the host path's qcow2 without a snapshot (HOST_BASELINE's
                    pairs), minutes apart: a ratio of means whose interval ignores drift between the two."""
    out: dict[str, dict[str, Interval]] = {}
    raw = meas[meas.phase == GUEST_RAW]
    for job, g in raw.groupby("job"):
        thin, host = _pair_iops(meas, LVM_THIN, job, 0), _pair_iops(meas, HOST_BASELINE, job, 0)
        r = g.set_index(["replicate", "repeat"])["iops"]
        common = r.index.intersection(thin.index)
        out[str(job)] = {"raw": geometric_mean_interval(r.to_numpy()),
                         "thin_over_raw": paired_ratio_interval(thin.loc[common].to_numpy(), r.loc[common].to_numpy()),
                         "guest_over_host": ratio_of_means_interval(r.to_numpy(), host.to_numpy())}
    return out


def _across_replicates(a: pd.Series, b: pd.Series, scale: Scale) -> Estimate:
    """a ÷ b over the replicates both have (one ratio per replicate, each an independent run of the whole plan):
    inference.ratio_estimate, a t pivot on the log ratios."""
    common = a.index.intersection(b.index)
    return ratio_estimate(a.loc[common].to_numpy(), b.loc[common].to_numpy(), scale)


def replicate_estimates(meas: pd.DataFrame, sw: pd.DataFrame) -> dict[str, dict[Key, Estimate]]:
    """The values the claims judge, each over the independent replicates (plan.replicated): per replicate one ratio
    of geometric means, then the t pivot of their logs (inference.ratio_estimate). Per configuration and job:
      loss                one snapshot ÷ none over the replicate's pairs (a loss in %);
      chain_end_loss      the longest chain of the sweep ÷ the no-snapshot runs before it (a loss in %);
      recovery            the runs at n = 0 after all deletes ÷ the no-snapshot runs before the sweep (%);
      delete_over_create  deleting ÷ creating over the lengths 1 … max_chain − 1 where both ran (%);
      chain_growth        the loss at the longest chain minus at one snapshot, pp (growth.chain_growth: C001-6).
    A run of one replicate gives estimates of n = 1, without an interval (not judged: n < 3)."""
    out: dict[str, dict[Key, Estimate]] = {"loss": {}, "chain_end_loss": {}, "recovery": {},
                                           "delete_over_create": {}}
    pairs = meas[meas.phase == "pair"]
    for (variant, job), g in pairs.groupby(["variant", "job"]):
        matched = g.groupby(["replicate", "repeat"]).filter(lambda r: set(r.chain_length) == {0, 1})
        out["loss"][(str(variant), str(job))] = _across_replicates(
            iops_by_replicate(matched[matched.chain_length == 1]),
            iops_by_replicate(matched[matched.chain_length == 0]), "loss_log")
    for (variant, job), g in sw.groupby(["variant", "job"]):
        key = (str(variant), str(job))
        create = g[g.phase == "create"]
        before = iops_by_replicate(create[create.chain_length == 0])
        longest = int(create.chain_length.max()) if len(create) else 0
        if longest > 0:
            out["chain_end_loss"][key] = _across_replicates(
                iops_by_replicate(create[create.chain_length == longest]), before, "loss_log")
        delete = g[g.phase == "delete"]
        if len(delete[delete.chain_length == 0]):
            out["recovery"][key] = _across_replicates(iops_by_replicate(delete[delete.chain_length == 0]), before,
                                                      "pct_log")
        lengths = sorted(set(delete.chain_length[delete.chain_length > 0]) & set(create.chain_length))
        if lengths:
            out["delete_over_create"][key] = _across_replicates(
                iops_by_replicate(delete[delete.chain_length.isin(lengths)]),
                iops_by_replicate(create[create.chain_length.isin(lengths)]), "pct_log")
    out["chain_growth"] = chain_growth(sw)
    return out


def largest_loss_estimate(chain_end: dict[Key, Estimate]) -> dict[str, Estimate]:
    """Per configuration, the chain-end loss of the job that lost most (by estimate; the job is chosen on the
    estimates, its interval is that job's over the replicates)."""
    out: dict[str, Estimate] = {}
    for (variant, _), est in sorted(chain_end.items()):
        if variant not in out or est.value > out[variant].value:
            out[variant] = est
    return out


def loss_table(loss: dict[Key, Estimate], pairs: dict[Key, Interval]) -> pd.DataFrame:
    """Loss with one snapshot (%) and its 95 % interval over the replicates (replicate_estimates' loss), per
    configuration and job, with the replicates and the pairs (all replicates') it stands on."""
    rows = []
    for (variant, job), e in sorted(loss.items()):
        low, high = e.interval(0.95)
        n_pairs = pairs[(variant, job)].n if (variant, job) in pairs else 0
        rows.append({"variant": variant, "job": job, "loss_pct": round(e.value, 1), "loss_pct_low": round(low, 1),
                     "loss_pct_high": round(high, 1), "replicates": e.n, "pairs": n_pairs})
    return pd.DataFrame(rows, columns=["variant", "job", "loss_pct", "loss_pct_low", "loss_pct_high", "replicates",
                                       "pairs"])


def fit_all(sw: pd.DataFrame) -> dict[Key, chain_model.ChainFit]:
    """The chain service-time model fitted per configuration and job to the sweep's (sweep(meas)) create phase,
    n = 0 from the runs before it (raises if a fit cannot be made: the paper quotes every one)."""
    return {(variant, job): chain_model.fit(g.chain_length.to_numpy(), g.iops.to_numpy())
            for (variant, job), g in sw[sw.phase == "create"].groupby(["variant", "job"])}


def largest_chain_end_loss(chain_end: dict[Key, Interval]) -> dict[str, Interval]:
    """Per variant, the chain-end loss of the job that lost most (by estimate)."""
    out: dict[str, Interval] = {}
    for (variant, _), iv in sorted(chain_end.items()):
        if variant not in out or iv.estimate > out[variant].estimate:
            out[variant] = iv
    return out


def _values(record: RunRecord, meas: pd.DataFrame, summary: pd.DataFrame, pairs: dict[Key, Interval],
            recovery: dict[Key, Interval], fits: dict[Key, chain_model.ChainFit],
            chain_end: dict[Key, Interval], guest: dict[str, dict[str, Interval]],
            mirror: dict[Key, Interval], by_second: dict[Key, list[Interval]] | None = None,
            settling: dict[Key, Interval] | None = None,
            estimates: dict[str, dict[Key, Estimate]] | None = None) -> list[Value]:
    k = STUDY
    params = record.parameters(ChainLengthParameters)
    est = estimates or {}

    def judged(name: str, key: Key, iv: Interval, unit: str = "%") -> Value:
        """The claim-bearing value `name` of `key`: over the replicates when the run has their estimate, else (an
        analysis called without them) the pooled interval, which the verdict rule does not judge."""
        e = est.get(name, {}).get(key)
        full = f"{k}.{name}.{'.'.join(key)}"
        return Value.of_estimate(full, e, unit) if e is not None else Value.of(full, iv, unit)

    out = [Value(f"{k}.max_chain", float(params.scale.max_chain), "snapshots"),
           Value(f"{k}.replicates_planned", float(params.scale.replicates), "replicates"),
           Value(f"{k}.replicates", float(meas.replicate.nunique()) if len(meas) else 0.0, "replicates")]
    shapes = {(m.iodepth, m.numjobs) for m in record.measurements if m.job in WORKLOADS}   # as the run recorded
    iodepth, numjobs = shapes.pop() if len(shapes) == 1 else (math.nan, math.nan)          # nan: mixed shapes
    out += [Value(f"{k}.iodepth", float(iodepth), "requests"), Value(f"{k}.numjobs", float(numjobs), "jobs"),
            Value(f"{k}.outstanding", float(iodepth * numjobs), "requests")]
    out += [Value(f"{k}.runtime_s", float(params.scale.runtime_s), "s"),
            Value(f"{k}.ramp_time_s", float(params.scale.ramp_time_s), "s"),
            Value(f"{k}.pairs_planned", float(params.scale.pairs), "pairs"),
            Value(f"{k}.pairs_basis", text=str(params.scale.pairs_basis))]
    for name, described in record.manifest.variants.items():   # the engine's describe(): its qcow2 config
        if described.get("engine", "qcow2") == "qcow2" and split_replicate(name)[1] == 0:
            out.append(Value(f"{k}.l2_cache_kib.{name}", described["config"]["l2_cache_size"] / 1024, "KiB"))
    out += operating_point_values(k, params.operating_points)
    for _, row in summary.iterrows():
        key = f"{row.variant}.{row.job}.{row.phase}.n{row.chain_length}"
        out.append(Value(f"{k}.iops.{key}", row.iops, "IOPS", row.iops_low, row.iops_high, int(row.n), 0, None,
                         row.iops_method if row.n > 1 else ""))
        out.append(Value(f"{k}.ratio.{key}", row.ratio, "", row.ratio_low, row.ratio_high, int(row.n), 2, None,
                         "ratio of means" if row.n > 1 else ""))
    for (variant, job), iv in sorted(pairs.items()):
        out.append(judged("loss", (variant, job), iv.scaled(-100, 100)))
        if (variant, job) in PUBLISHED_LOSS:
            # where its interval lies against the seed's Table 1, in words the prose prints (the calibrating rows
            # came out below the seed's in one full set and include it in the next)
            out.append(Value(f"{k}.loss.{variant}.{job}.vs_published",
                             text=out[-1].side_of(PUBLISHED_LOSS[(variant, job)])))
        out.append(Value(f"{k}.pairs.{variant}.{job}", float(iv.n), "pairs"))
        sd = pair_log_sd(meas, variant, job)
        out.append(Value(f"{k}.pair_log_sd.{variant}.{job}", sd, "", digits=3))
        # the pairs this run's own spread would need (the plan sized them from PAIR_LOG_SD)
        needed = float(pairs_needed(sd)) if math.isfinite(sd) else math.nan
        out.append(Value(f"{k}.pairs_needed.{variant}.{job}", needed, "pairs"))
    # The loss in each second of the pairs' runs (the same sign as .loss), the last second's under .last too (its
    # number depends on the run's length), and the seconds there were; the settling from the first to the last.
    # The first and last seconds and the settling are there for every pair of a configuration and job, nan when the
    # runs are too short to have them (smoke's 1-s runs): the paper quotes them, and builds from smoke runs too.
    for variant, job in sorted({*pairs, *(by_second or {})}):
        seconds = (by_second or {}).get((variant, job), [])
        for second, iv in enumerate(seconds, 1):
            out.append(Value.of(f"{k}.loss_by_second.{variant}.{job}.s{second}", iv.scaled(-100, 100), "%"))
        if not seconds:
            out.append(Value(f"{k}.loss_by_second.{variant}.{job}.s1", math.nan, "%"))
        last = f"{k}.loss_by_second.{variant}.{job}.last"
        out.append(Value.of(last, seconds[-1].scaled(-100, 100), "%") if seconds else Value(last, math.nan, "%"))
        out.append(Value(f"{k}.loss_seconds.{variant}.{job}", float(len(seconds)), "s"))
        settled = (settling or {}).get((variant, job))
        key = f"{k}.loss_settling.{variant}.{job}"
        out.append(Value.of(key, settled.scaled(100), "%") if settled is not None and settled.n
                   else Value(key, math.nan, "%"))
        # where its interval lies against no change, in words the prose prints (30-s runs resolve what 3-s do not)
        out.append(Value(f"{key}.vs_hundred", text=out[-1].side_of(100.0)))
    host_sds = [pair_log_sd(meas, v, j) for v, j in pairs if v != LVM_THIN]
    out.append(Value(f"{k}.pair_log_sd_max_host", max(host_sds, default=math.nan), "", digits=3))
    for (variant, job), iv in sorted(recovery.items()):
        out.append(judged("recovery", (variant, job), iv.scaled(100)))
    for (variant, job), iv in sorted(mirror.items()):
        out.append(judged("delete_over_create", (variant, job), iv.scaled(100)))
        # Where the mirror's difference comes from: writes at the device below per guest write, with a chain
        # (lengths >= 1), while creating and while deleting. Counts per I/O stay on the linear t interval: their
        # arithmetic mean is the amplification, and a count per I/O can be 0.
        for phase in ("create", "delete"):
            sel = meas[(meas.variant == variant) & (meas.job == job) & (meas.phase == phase)
                       & (meas.chain_length >= 1)]["host_writes_per_vm_write"].dropna().to_numpy()
            if len(sel):
                out.append(Value.of(f"{k}.host_writes_per_vm_write.{variant}.{job}.{phase}", mean_interval(sel),
                                    "writes", digits=2))
    for (variant, job), iv in sorted(chain_end.items()):
        out.append(judged("chain_end_loss", (variant, job), iv))
        # where its interval lies against no loss, in words the prose prints (a rerun may move it)
        out.append(Value(f"{k}.chain_end_loss.{variant}.{job}.vs_zero", text=out[-1].side_of(0.0)))
    growth = est.get("chain_growth", {})
    out += [Value.of_estimate(f"{k}.chain_growth.{v}.{j}", e, "%") for (v, j), e in sorted(growth.items())]
    largest = largest_loss_estimate(est.get("chain_end_loss", {}))
    for variant, iv in sorted(largest_chain_end_loss(chain_end).items()):
        key = f"{k}.chain_end_loss_max.{variant}"
        out.append(Value.of_estimate(key, largest[variant], "%") if variant in largest else Value.of(key, iv, "%"))
    # LVM thin: shared chunks broken per write the thin volume completed, in the one-snapshot runs of the pairs (both
    # counters span the whole fio process; fio's own counts would leave a ramp out, which is why the plan has none).
    # A count per write, 0 once every chunk is broken: linear t interval.
    thin = meas[(meas.variant == LVM_THIN) & (meas.phase == "pair") & (meas.chain_length == 1)]
    for job, g in thin.groupby("job"):
        per_write = (g[CHUNKS_BROKEN] / g[GUEST_WRITES].where(g[GUEST_WRITES] > 0)).dropna().to_numpy()
        out.append(Value.of(f"{k}.chunks_broken_per_write.{LVM_THIN}.{job}", mean_interval(per_write), "", digits=2))
    for job, ivs in sorted(guest.items()):
        out.append(Value.of(f"{k}.guest.raw_iops.{job}", ivs["raw"], "IOPS", digits=0))
        out.append(Value.of(f"{k}.guest.thin_over_raw.{job}", ivs["thin_over_raw"].scaled(100), "%"))
        out.append(Value(f"{k}.guest.thin_over_raw.{job}.vs_hundred", text=out[-1].side_of(100.0)))
        out.append(Value.of(f"{k}.guest.guest_over_host.{job}", ivs["guest_over_host"].scaled(100), "%"))
    for (variant, job), f in sorted(fits.items()):
        for p, (lo, hi) in zip(("tau0_us", "tau1_us", "tau_layer_us"), f.ci95, strict=False):
            out.append(Value(f"{k}.fit.{variant}.{job}.{p}", getattr(f, p), "µs", lo, hi, f.points, 1, None,
                             "least squares, t"))
        out.append(Value(f"{k}.fit.{variant}.{job}.r2", f.r2, "", digits=2))
    rand = meas[(meas.job == "randrw") & (meas.phase != GUEST_RAW)]
    for variant, g in rand.groupby("variant"):
        for label, sel in (("snapshot", g[g.chain_length >= 1]), ("none", g[g.chain_length == 0])):
            iv = mean_interval(sel["host_reads_per_vm_read"].dropna().to_numpy())   # a count per I/O: linear t
            out.append(Value.of(f"{k}.host_reads_per_vm_read.{variant}.{label}", iv, "reads", digits=2))
    return out


def _claims(pairs: dict[Key, Interval], recovery: dict[Key, Interval], chain_end: dict[Key, Interval],
            mirror: dict[Key, Interval], growth: dict[Key, Estimate] | None = None) -> list[Claim]:
    claims = []
    for (variant, job), published in PUBLISHED_LOSS.items():
        if (variant, job) not in pairs:
            continue
        datastore = STAND_IN[variant].split()[0]
        claims.append(Claim(f"{STUDY}.loss.{variant}.{job}", "setty2021", "Table 1",
                            f"{datastore}, FIO {JOB_WORDS[job]}: loss with 1 snapshot", published, "%", 0.0,
                            LOSS_TOLERANCE_PP, LOSS_BASIS, f"{STUDY}.loss.{variant}.{job}", ENGINE_WORDS[variant],
                            "No impact" if published == 0 else "", label=SEED_CLAIM[variant]))
    figures_1_to_4 = [k for k in sorted(chain_end) if k[0] in CHAIN_PUBLISHED and k[1] in WORKLOADS]
    for (variant, job), words in ((k, CHAIN_PUBLISHED[k[0]]) for k in figures_1_to_4):
        datastore = STAND_IN[variant].split()[0]
        claims.append(Claim(f"{STUDY}.chain_end_loss.{variant}.{job}", "setty2021",
                            "Performance Results, after figures 1 to 4",
                            f"{datastore}, FIO {JOB_WORDS[job]}: loss with the longest chain", 0.0, "%", 0.0,
                            LOSS_TOLERANCE_PP, LOSS_BASIS, f"{STUDY}.chain_end_loss.{variant}.{job}",
                            ENGINE_WORDS[variant], words, label=SEED_CLAIM[variant]))
    for variant, published in LARGEST_LOSS_PUBLISHED.items():
        if any(k[0] == variant for k in chain_end):
            datastore = STAND_IN[variant].split()[0]
            claims.append(Claim(f"{STUDY}.chain_end_loss_max.{variant}", "setty2021", "Summary (Guest performance)",
                                f"{datastore}: the largest loss of guest IOPS (ours: the FIO job that lost most, "
                                "at the longest chain)", published, "%", 0.0, LOSS_TOLERANCE_PP, LOSS_BASIS,
                                f"{STUDY}.chain_end_loss_max.{variant}", ENGINE_WORDS[variant], "as much as 85 %",
                                label=SEED_CLAIM[variant]))
    # Seed 001 reports recovery after deleting for the redo-log datastores (figures 5 and 6); vVOL has no
    # performance to recover, so its recovery and its mirror are values, not claims. Runs of the first plans
    # deleted with the 4 KiB jobs; the seed's own job for figures 5 and 6 is the mirror job.
    judged_against_before = (
        ("recovery", recovery, "Figure 6 and Summary", "performance after all snapshots are deleted (÷ before)",
         "full recovery"),
        ("delete_over_create", mirror, "Figures 5 and 6",
         "IOPS while deleting ÷ while creating, at the same chain length", "almost a mirror image"))
    for name, intervals, where, what, words in judged_against_before:
        for variant, job in sorted(k for k in intervals if k[0] != LVM_THIN):
            datastore = STAND_IN[variant].split()[0]
            claims.append(Claim(f"{STUDY}.{name}.{variant}.{job}", "setty2021", where,
                                f"{datastore}, FIO {JOB_WORDS[job]}: {what}", 100.0, "%", 100.0,
                                RECOVERY_TOLERANCE_PP, RECOVERY_BASIS, f"{STUDY}.{name}.{variant}.{job}",
                                ENGINE_WORDS[variant], words, label=RECOVERY_CLAIM))
    datastores = {v: STAND_IN[v].split()[0] for v in GROWTH_VARIANTS}
    return claims + growth_claims(growth or {}, datastores, ENGINE_WORDS)


def analyse(record: RunRecord) -> ChainAnalysis:
    meas = per_measurement(record)
    sw = sweep(meas)
    summary = summarize(sw)
    pairs, recovery = pair_ratios(meas), recovery_ratios(sw)
    fits = fit_all(sw)
    chain_end, guest, mirror = chain_end_losses(sw), guest_ceiling(meas), mirror_ratios(summary)
    seconds = pair_seconds(record, meas)
    by_second = {key: loss_by_second(one, none) for key, (one, none) in seconds.items()}
    settling = {key: settling_ratio(one, none) for key, (one, none) in seconds.items()}
    estimates = replicate_estimates(meas, sw)
    values = _values(record, meas, summary, pairs, recovery, fits, chain_end, guest, mirror, by_second, settling,
                     estimates)
    heldout = heldout_tests(sw, record.manifest.profile.name)
    values += [v for (variant, j), h in sorted(heldout.items())
               for v in heldout_values(f"{STUDY}.chain.heldout.{variant}.{j}", h)]
    by_key = {v.key: v for v in values}
    outcomes = [outcome(c, by_key) for c in _claims(pairs, recovery, chain_end, mirror, estimates["chain_growth"])]
    return ChainAnalysis(record, values, outcomes, meas, summary, pairs, recovery, mirror, fits, guest, by_second,
                         settling, heldout, estimates)
