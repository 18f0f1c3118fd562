"""Seed 001's "the loss grows with the chain" (C001-6, declared in the science plan §18), part of the chain-length
analysis: per configuration and job, within each replicate's sweep (one sitting), the loss at the sweep's longest
chain minus the loss at one snapshot, each against the replicate's no-snapshot runs before the sweep (loss =
100 × (1 − ratio of geometric-mean IOPS)), in percentage points; a t pivot over the replicates (linear: a
difference). Pure."""
from __future__ import annotations

import pandas as pd

from ...analysis import geometric_mean_by_replicate
from ...claims import Claim
from ...inference import Estimate, mean_estimate

Key = tuple[str, str]
# The configurations whose chains seed 001's figures 1-4 show degrading (our stand-ins for VMFS and vSAN) on its
# random job: the statements the pre-registration registers (chain_length.chain_growth.<variant>.randrw).
GROWTH_VARIANTS = ("on-disk-metadata", "in-memory-metadata")
GROWTH_JOB = "randrw"
GROWTH_CLAIM = "C001-6"
# The analysis's tolerance and direction placeholder (no effect + 2 × the tolerance); the registration's rule judges
# the claim with its own (5 pp of a rate, the smallest effect that matters).
GROWTH_TOLERANCE_PP = 5.0
GROWTH_BASIS = ("registered: 'degradation grows with the chain' (no number): it agrees when the loss at the longest "
                "chain exceeds the loss with one snapshot by more than the smallest effect that matters")


def iops_by_replicate(runs: pd.DataFrame) -> pd.Series:
    """The geometric mean IOPS of `runs` per replicate (runs with IOPS ≤ 0 left out): the sweep's one number per
    replicate, shared with analyse."""
    return geometric_mean_by_replicate(runs.iops, runs.replicate)


def chain_growth(sw: pd.DataFrame) -> dict[Key, Estimate]:
    """The module's value per (variant, job) of the sweep `sw` (analyse.sweep's rows), for every replicate that has
    the no-snapshot runs before the sweep, one snapshot and the longest chain (> 1)."""
    out: dict[Key, Estimate] = {}
    for (variant, job), g in sw[sw.phase == "create"].groupby(["variant", "job"]):
        longest = int(g.chain_length.max())
        if longest <= 1:
            continue

        before, one, end = (iops_by_replicate(g[g.chain_length == n]) for n in (0, 1, longest))
        common = before.index.intersection(one.index).intersection(end.index)
        if len(common):
            pp = 100 * (one.loc[common] - end.loc[common]) / before.loc[common]
            out[(str(variant), str(job))] = mean_estimate(pp.to_numpy())
    return out


def growth_claims(growth: dict[Key, Estimate], datastore: dict[str, str], engine: dict[str, str]) -> list[Claim]:
    """GROWTH_CLAIM for each of GROWTH_VARIANTS the run measured on GROWTH_JOB (`datastore`: variant → the seed's
    datastore; `engine`: variant → our stand-in's words)."""
    return [Claim(f"chain_length.chain_growth.{variant}.{GROWTH_JOB}", "setty2021", "Figures 1-4",
                  f"{datastore[variant]}: the loss grows with the chain (loss at the longest chain minus loss with "
                  "one snapshot, pp)", 2 * GROWTH_TOLERANCE_PP, "%", 0.0, GROWTH_TOLERANCE_PP, GROWTH_BASIS,
                  f"chain_length.chain_growth.{variant}.{GROWTH_JOB}", engine[variant],
                  "degradation grows with the chain (no number)", label=GROWTH_CLAIM, direction=1)
            for variant in GROWTH_VARIANTS if (variant, GROWTH_JOB) in growth]


__all__ = ["chain_growth", "iops_by_replicate", "growth_claims", "GROWTH_VARIANTS", "GROWTH_JOB", "GROWTH_CLAIM",
           "GROWTH_TOLERANCE_PP"]
