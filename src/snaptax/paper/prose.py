"""What the paper's prose says about its values, checked against the data at every render.

A number reaches the paper only as a generated value; a sentence that reads it ("both intervals include 1", "the
deletion did not converge") is typed. A rerun can change the number and leave the sentence wrong. Each such
sentence is a Fact here. `snaptax render` checks them all; one that no longer holds does not stop the build (a
user's rerun must end in a paper): render names the value and the sentence in the terminal and on the paper's first
page (outdated_tex), so the PDF says which of its sentences its data no longer support. Smoke runs are too short for
their numbers to mean anything, so a smoke build (make test) does not check them; tests check the facts against the
committed quick runs. A sentence whose wording can follow its value is better generated (as Value.side_of does).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from .. import registration
from ..errors import SnaptaxError
from ..record import LATENESS_LIMIT
from ..values import DerivedValues, Value
from .heldout import PREDICTS

Relation = Literal["includes", "above", "below", "estimate_below", "estimate_above", "equals", "says"]


class ProseOutdated(SnaptaxError):
    """A sentence of the paper no longer says what the data say."""


@dataclass(frozen=True)
class Fact:
    """`key`'s value stands in `relation` to `times` × `than` (a number, or another value's key: its estimate;
    a claim's published value is the key published(claim id) gives):
    includes: the 95 % interval holds it; above/below: the whole interval lies above/below it;
    estimate_below/estimate_above: the estimate is below/above it (for a value without an interval: a model's
    prediction from fixed inputs, a count, a maximum); equals: the estimate equals it; says: the value's text is
    `than` (a word, not a key: a held-out verdict). `where`: the sentence's place."""

    key: str
    relation: Relation
    than: float | str
    where: str
    times: float = 1.0     # a factor the sentence puts on `than` ('more than twice the seed's share': 2)

    @property
    def reads(self) -> list[str]:
        """The keys the fact reads: its value's, and `than` when that names a value."""
        return [self.key] + ([self.than] if isinstance(self.than, str) and self.relation != "says" else [])

    def reference(self, values: Mapping[str, Value]) -> float:
        return self.times * (values[self.than].value if isinstance(self.than, str) else float(self.than))

    def holds(self, values: Mapping[str, Value]) -> bool:
        if self.relation == "says":
            return values[self.key].text == self.than
        v, x = values[self.key], self.reference(values)
        if self.relation == "includes":
            return v.includes(x)
        if self.relation == "above":
            return v.has_interval and v.low > x
        if self.relation == "below":
            return v.has_interval and v.high < x
        if self.relation == "estimate_below":
            return math.isfinite(v.value) and v.value < x
        if self.relation == "estimate_above":
            return math.isfinite(v.value) and v.value > x
        return v.value == x


# what a fact that does not hold says of its value, per relation
FAILED: dict[Relation, str] = {"includes": "whose interval does not include", "above": "not wholly above",
                               "below": "not wholly below", "estimate_below": "not below",
                               "estimate_above": "not above", "equals": "not", "says": "not"}

RATIOS = ("first_ratio", "steady_ratio")     # the engines study's write ratios the prose reads



def registered_band(claim_id: str, around: str) -> tuple[float, float]:
    """A claim's band as the newest registration fixes it (the tolerance the claims table prints and the verdicts
    use: snaptax.judged): (centre − tolerance, centre + tolerance), the centre its `around` field, 'no_effect' or
    'published'."""
    reg = registration.newest()
    if reg is None:
        raise SnaptaxError(f"no registration to read {claim_id}'s band from (paper/preregistration/)")
    r = reg.get(claim_id)
    centre = float(getattr(r, around))
    return centre - r.tolerance, centre + r.tolerance


# The bands the prose reads from a claim's tolerance: (claim id, the claim's field the band is centred on) -> band,
# read from the registration (registered_band), so a sentence is checked against the tolerance the verdicts use and
# the claims table prints, never a copy of it (before 2026-12-01 these were copies of the analysis modules' own
# tolerances: seed 000's doubled reads were read against ±0.5 while the registration's tolerance is 0.2).
BANDS: dict[tuple[str, str], tuple[float, float]] = {
    key: registered_band(*key) for key in (("lifecycle.C000-5", "no_effect"),          # no change in service time
                                           ("calibration.reads_double", "published"))  # seed 000's doubled reads
}
SEEK_BAND = BANDS[("lifecycle.C000-5", "no_effect")]
READS_DOUBLE_BAND = BANDS[("calibration.reads_double", "published")]
LATENESS_LIMIT_PCT = 100 * LATENESS_LIMIT     # a measurement later than this is flagged (paper.lateness_limit_pct)
WITHIN: tuple[Relation, Relation] = ("above", "below")                      # the interval, against a band's ends
ESTIMATE_WITHIN: tuple[Relation, Relation] = ("estimate_above", "estimate_below")   # the estimate, likewise
# A miss reads a whole number of slices: "one slice" is the interval lying nearer 1 than 0 or 2, wholly (the
# write miss's "about two" is the interval above 1.5, likewise); a band from the count's being whole, not from data.
ONE_SLICE_BAND = (0.5, 1.5)
# The models the body's discussion draws advice from, each in a paragraph of its own (snaptax.tex)
ADVICE_MODELS = ("db_snapshots.copy_work", "lifecycle.seek")


def advice_holds(values: Mapping[str, Value], model: str) -> bool:
    """The body's discussion draws advice from `model` (one of ADVICE_MODELS) only where it predicts held-out data:
    its held-out verdict 'predicts' and the whole 95 % interval of its held-out error within the bound (stricter
    than the verdict's 90 %). The paragraph is typeset only then (macros: \\advice), so a build whose data the
    model does not predict has no such paragraph rather than an outdated one."""
    verdict, error = values.get(f"{model}.heldout.verdict"), values.get(f"{model}.heldout.error")
    bound = values.get(f"{model}.heldout.bound")
    if verdict is None or error is None or bound is None or verdict.text != PREDICTS or not error.has_interval:
        return False
    return -bound.value <= error.low and error.high <= bound.value


def published(claim_id: str) -> str:
    """The key of a claim's published value, as render prints it (claim.<id>.published)."""
    return f"claim.{claim_id}.published"


FACTS: tuple[Fact, ...] = (
    Fact("chain_length.ramp_time_s", "equals", 0.0,
         "seed001.tex, set-up: fio runs with no ramp, so that the device's counters and fio count the same I/Os"),
    Fact("engines.first_ratio.cofw-p8k", "below", 1.0,
         "snaptax.tex (abstract, findings, seed 004, figure 5, conclusion); supplement: intro, engines.tex, "
         "discussion.tex and conclusion.tex: the copy-on-first-write engine ran slower while copying pages (interval "
         "below 1)"),
    Fact("engines.steady_ratio.cofw-p8k", "includes", 1.0,
         "snaptax.tex (figure 5, conclusion); supplement: intro, engines.tex, discussion.tex and conclusion.tex: once "
         "the pages were copied its interval includes 1"),
    Fact("engines.steady_ratio.cofw-p8k", "above", 0.9,
         "intro, engines.tex, discussion.tex and conclusion.tex: ... and lies within 10 % of it (above 0.9)"),
    Fact("engines.steady_ratio.cofw-p8k", "below", 1.1,
         "intro, engines.tex, discussion.tex and conclusion.tex: ... and lies within 10 % of it (below 1.1)"),
    Fact("engines.extra_us_per_first_write.cofw-p8k", "above", 0.0,
         "discussion.tex: the time added per copied page does exclude zero"),
    Fact("db_snapshots.raid5_15k_6.fit.overlap", "estimate_below", 0.1,
         "db_snapshots.tex: the one pusher writes the two snapshots' copies on the RAID5 one after the other"),
    Fact("metadata_cache.loss.cover-1-8", "above", "metadata_cache.implied.vmfs.published_pct",
         "snaptax.tex, seed 001; metadata_cache.tex and conclusion.tex: one eighth of the tables loses more than "
         "VMFS's "
         "published loss"),
    Fact("metadata_cache.implied.vsan.coverage", "above", 0.9,
         "metadata_cache.tex: a redo log has to keep nearly all of its metadata in memory to lose only vSAN's loss"),
    Fact("memory_dump.vs_estimate.raid1_10k.p64-w25", "above", 1.0,
         "snaptax.tex (abstract, findings, seed 003); memory_dump.tex, the grid, and conclusion.tex: our walker waits "
         "as asked and "
         "then pays the device on top, "
         "never less than the waits (checked on the mirror: on the SSD-class device the device's share is within a "
         "rerun's noise, though never below the waits by construction)"),
    Fact("chain_length.loss.on-disk-metadata.readwrite", "below", "chain_length.loss.on-disk-metadata.randrw",
         "snaptax.tex and seed001.tex: the sequential job escapes the random job's cost (its whole interval below the "
         "random job's loss)"),
    Fact("engines.steady_ratio.lvmthin-c64k", "includes", 1.0,
         "engines.tex: LVM thin is at base-disk speed once the sharing is broken"),
    Fact("engines.first_ratio.lvmthin-c64k", "below", 1.0,
         "engines.tex: ... but the breaking itself is not free at small queue depth"),
    # the seed's VM kept (110 + 100) / (510 + 250) of its IOPS (C000-3a): "far less" is more than twice that left
    Fact("lifecycle.saturated.vm_total_with_over_before", "above", published("lifecycle.C000-3a"),
         "lifecycle.tex: the snapshot took far less from our saturated VM than from the seed's (more than twice the "
         "seed's share left)", times=2),
    Fact("lifecycle.saturated.vm_total_with_over_before", "below", 100.0,
         "lifecycle.tex: ... though it took some"),
    Fact("lifecycle.saturated.read_during_iterative_over_before", "below",
         "lifecycle.saturated.vm_with_over_before",
         "lifecycle.tex: our reader's share fell from that with the snapshot to that during the deletion"),
    Fact("tiering.tier_pool.initial.model_rate_pct", "estimate_below", 100.0,
         "snaptax.tex (seed 002) and tiering.tex, results: the flash tier served short of its model's rate (the rest "
         "attributed to NBD's round trip), so the measured ratios lean towards less loss"),
    Fact("tiering.sas_pool.with.ratio", "below", 100.0,
         "tiering.tex, results: on sas_pool the snapshot costs a loss"),
    Fact("tiering.tier_pool.with.ssd_share", "estimate_below", "tiering.tier_pool.initial.ssd_share",
         "snaptax.tex (abstract, findings, seed 002) and tiering.tex, results: with the snapshot the SSD-served share "
         "fell"),
    *(Fact(f"tiering.{pool}.lvmthin.after.ratio", "below", 100.0,
           "snaptax.tex (abstract, findings, discussion) and tiering.tex, discussion.tex, conclusion.tex: LVM thin's "
           "loss outlasts its snapshot's deletion")
      for pool in ("sas_pool", "tier_pool")),
    Fact("lifecycle.light.converged_pct", "includes", "lifecycle.saturated.converged_pct",
         "discussion.tex: the light-load interval of converged deletions includes the saturated estimate"),
    *(Fact("lifecycle.seek.predicted_service_without_over_with", relation, bound,
           "lifecycle.tex, seek span: the model predicts a change within the claim's tolerance of no change (C000-5's "
           "band; a prediction from the datasheet figures, without an interval)")
      for relation, bound in zip(ESTIMATE_WITHIN, SEEK_BAND, strict=True)),
    *(Fact("calibration.reads_double.host_reads_per_vm_read.snapshot", relation, bound,
           "snaptax.tex (table 1, seed 000), conclusion.tex and calibration.tex: at the point read off the sweep a VM "
           "read "
           "cost the seed's two host "
           "reads within the claim's tolerance: the calibration holds")
      for relation, bound in zip(WITHIN, READS_DOUBLE_BAND, strict=True)),
    Fact("calibration.implied.esx35.coverage", "estimate_below", 1 / 64,
         "snaptax.tex (seed 000), calibration.tex and conclusion.tex: read off the sweep, the seed's two host reads "
         "per VM "
         "read lie below the "
         "least cache QEMU allows (the point is no cache)"),
    # lifecycle's 256 MiB volume has 8 L2 slices: a point below 5/16 rounds to its least cache, two slices
    Fact("calibration.implied.esx35.coverage", "estimate_below", 2.5 / 8,
         "calibration.tex: the lifecycle study's smaller volume cannot realise so small a share of its tables"),
    Fact("lifecycle.consolidation.heldout.commit.error", "above", 10.0,
         "lifecycle.tex: the consolidation model does not predict deletions it was not fitted to (its worst commit "
         "time beyond the held-out bound)"),
    Fact("lifecycle.coverage_inferred", "estimate_below", "lifecycle.coverage",
         "lifecycle.tex: the point inferred on the calibration study's volume is less than this volume's least cache"),
    Fact("lifecycle.light.host_reads_per_vm_read_factor", "above", 1.0,
         "lifecycle.tex: with QEMU's least cache the delta's lookups read the device (more than one host read per "
         "VM read)"),
    Fact("memory_dump.fit.raid1_10k.oversleep.delta_aic", "equals", 0.0,
         "memory_dump.tex, the grid: the oversleep model's lower AIC on the mirror (it is the mirror's best by AIC), "
         "read as a term for rotational misses, not as the timer's behaviour"),
    Fact("tiering.tier_pool.after.ssd_share", "equals", "tiering.tier_pool.initial.ssd_share",
         "snaptax.tex (seed 002) and tiering.tex, results: after the consolidation the SSD-served share was back at "
         "the "
         "initial phase's"),
    Fact("tiering.tier_pool.after.ssd_share", "equals", 100.0,
         "tiering.tex, results: ... at once (every I/O of the phase went to SSD extents, so from its start)"),
    Fact("db_snapshots.raid5_15k_6.second_over_first", "above", 100.0,
         "db_snapshots.tex, against the seed: on the RAID5 the second snapshot added more than the first (the whole "
         "interval above 100 %)"),
    Fact("db_snapshots.ssd_snapshots.fit.tau2_us", "below", "db_snapshots.ssd_snapshots.fit.tau1_us",
         "db_snapshots.tex, the cost model: on the SSD pair the second snapshot still costs less than the first"),
    Fact("tiering.sas_pool.lvmthin.worst_lateness_pct", "estimate_below",
         "tiering.tier_pool.lvmthin.worst_lateness_pct",
         "tiering.tex, LVM thin: the lateness is largest on the tiered pool, in its SSD-served phases"),
    # QEMU's NBD server serves at most 16 requests per connection (MAX_NBD_REQUESTS in nbd/server.c)
    Fact("chain_length.iodepth", "estimate_above", 16.0,
         "seed001.tex, metadata_cache.tex and threats.tex: fio's depth per job is more than the 16 requests the "
         "daemon serves per NBD connection, so the effective queue depth is numjobs x 16, not numjobs x iodepth"),
    *(Fact("metadata_cache.randread.slices_per_miss", relation, bound,
           "metadata_cache.tex: with simple NBD replies a read miss reads one slice (the excess of mu is the writes')")
      for relation, bound in zip(WITHIN, ONE_SLICE_BAND, strict=True)),
    Fact("metadata_cache.randrw.slices_per_write_miss", "above", 1.5,
         "metadata_cache.tex: a write miss reads about two slices (the excess of mu is the writes')"),
    *(Fact("calibration.reads_double.slices_per_miss", relation, bound,
           "metadata_cache.tex: the calibration study's read job also counts one slice per read miss")
      for relation, bound in zip(WITHIN, ONE_SLICE_BAND, strict=True)),
    Fact("chain_length.chain_growth.on-disk-metadata.randrw", "below", "chain_length.loss.on-disk-metadata.randrw",
         "snaptax.tex, findings: up to the longest chain each further layer added less than the first snapshot (the "
         "growth from one snapshot to the longest chain below the first snapshot's loss)"),
    Fact("metadata_cache.control_reads_per_io", "estimate_below", 1e-4,
         "metadata_cache.tex: without a snapshot the metadata reads are below 10^-4 per I/O"),
    Fact("memory_dump.fit.raid1_10k.oversleep.delta_ms", "below", 0.0,
         "memory_dump.tex, the grid, and intro.tex: on the mirror the fitted oversleep is negative, a fudge term for "
         "rotational misses rather than the timer"),
    Fact("memory_dump.fit.ssd.oversleep.delta_ms", "includes", 0.0,
         "memory_dump.tex, the grid: on the SSD-class device the same walker's oversleep interval includes zero (so "
         "the negative one on the mirror is not the timer's doing)"),
    Fact("memory_dump.seed.iteration_ms.default", "estimate_below", 25.0,
         "snaptax.tex (findings, seed 003) and conclusion.tex: seed 003's walker took less time per iteration with its "
         "defaults than its 25-ms wait"),
    Fact("chain_length.host_writes_per_vm_write.on-disk-metadata.mirror.create", "above",
         "chain_length.host_writes_per_vm_write.on-disk-metadata.mirror.delete",
         "intro.tex: the on-disk-metadata redo log wrote more to the device per guest write while creating than while "
         "deleting"),
    Fact("memory_dump.seed.implied_delta_ms.raid1_10k", "estimate_below", 0.0,
         "memory_dump.tex, the seed's timings: the oversleep the seed's default time needs on our mirror is negative"),
    # The loss with one snapshot in each second of the pairs' runs (chain_length.loss_by_second.*, .last: the run's
    # last second; loss_settling: the last second's one/none ratio as % of the first's, 100 % = no change).
    *(Fact(f"chain_length.loss_by_second.on-disk-metadata.randrw.{second}", "above", 0.0,
           "threats.tex, per-second losses: with the metadata on disk the random job lost IOPS in every second "
           "(each second's interval above 0)") for second in ("s1", "s2", "last")),
    Fact("chain_length.fit.on-disk-metadata.randrw.tau_layer_us", "below",
         "chain_length.fit.on-disk-metadata.randrw.tau1_us",
         "discussion.tex (supplement), the metadata cache: with the metadata partly on disk the first snapshot cost "
         "more than any further layer"),
    Fact("chain_length.loss.lvm-thin.randrw", "above", 0.0,
         "snaptax.tex, findings: LVM thin lost IOPS with one snapshot"),
    Fact("tiering.sas_pool.lvmthin.after.copied_write_pct", "estimate_above", 0.0,
         "snaptax.tex (findings, seed 002, conclusion): after lvremove dm-thin still copied chunks on first writes"),
    Fact("tiering.tier_pool.lvmthin.after.ssd_share", "estimate_below", "tiering.tier_pool.initial.ssd_share",
         "snaptax.tex, conclusion: with LVM thin the misplacement does not end with the snapshot"),
    Fact("memory_dump.busy_pct.raid1_10k.p2048-w2", "estimate_above", 50.0,
         "memory_dump.tex, C003-5: at the tuned setting the device's write, not the fixed wait, makes most of each "
         "iteration on the mirror"),
    *(Fact(f"engines.fit.{engine}.c", relation, bound,
           "snaptax.tex (findings, seed 004): a first write moved the bytes each engine's mechanism predicts (copy "
           "factor within 10 % of 1)")
      for engine in ("cofw", "qcow2", "qcow2-ext") for relation, bound in zip(WITHIN, (0.9, 1.1), strict=True)),
    *(Fact(f"engines.bytes_per_write_kib_steady.{variant}", "below", 4.1,
           "snaptax.tex (findings, discussion): once the grains were copied a 4 KiB guest write moved no more than "
           "its own data")
      for variant in ("cofw-p8k", "lvmthin-c64k", "qcow2-c64k")),
)


def _number(x: object) -> float:
    return float(x) if isinstance(x, int | float) else math.nan      # a claim without a number stores none


def fact_values(derived: Iterable[DerivedValues]) -> dict[str, Value]:
    """What the facts are checked against: the runs' values, and the published value of each claim the runs test
    (published(id), from the runs' claim rows), so that a sentence set against a seed's number reads that number
    from its claim rather than a copy of it."""
    out: dict[str, Value] = {}
    for d in derived:
        out.update(d.values)
        out.update({published(c["id"]): Value(published(c["id"]), _number(c.get("published")), c.get("unit", ""))
                    for c in d.claims})
    return out


def broken(facts: Iterable[Fact], values: Mapping[str, Value]) -> list[str]:
    """One description per fact that does not hold (or whose value is missing)."""
    out = []
    for f in facts:
        missing = [k for k in f.reads if k not in values]
        if missing:
            out.append(f"{', '.join(missing)}: no such value ({f.where})")
        elif not f.holds(values):
            v = values[f.key]
            if f.relation == "says":
                out.append(f"{f.key} = {v.text!r}, {FAILED[f.relation]} {f.than!r}: rewrite {f.where}")
                continue
            shown = f"{v.value:g} [{v.low:g}, {v.high:g}]" if v.has_interval else f"{v.value:g}"
            out.append(f"{f.key} = {shown}, {FAILED[f.relation]} {f.reference(values):g}: rewrite {f.where}")
    return out


def check(values: Iterable[Value], facts: Iterable[Fact] = FACTS) -> None:
    """Raise ProseOutdated (one line) when a fact no longer holds (for tests and tools that must stop)."""
    problems = broken(facts, {v.key: v for v in values})
    if problems:
        raise ProseOutdated("the paper's prose no longer matches the data: " + "; ".join(problems))


def outdated_tex(problems: list[str]) -> str:
    """The first page's warning: the sentences whose facts no longer hold, each with its value ('' when none)."""
    from .macros import tex_escape

    if not problems:
        return ""
    items = "\n".join(rf"\item {tex_escape(p)}" for p in problems)
    plural = "s" if len(problems) > 1 else ""
    return (r"\noindent\fbox{\parbox{\dimexpr\linewidth-2\fboxsep-2\fboxrule}{\small\textbf{Warning: the data no "
            rf"longer support {len(problems)} sentence{plural} of this paper}} (each names its value and the sentence "
            r"to rewrite):\begin{itemize}\setlength\itemsep{0pt}" + "\n" + items + "\n"
            + r"\end{itemize}}}\par\medskip" + "\n")


__all__ = ["Relation", "ProseOutdated", "Fact", "BANDS", "ADVICE_MODELS", "advice_holds", "FACTS", "published",
           "fact_values", "broken", "check", "outdated_tex"]
