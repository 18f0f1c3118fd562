"""The memory-dump values over independent replicates (issue 47.3): one number per replicate (the geometric mean of
its runs), then a t pivot, for the claims' values at the seed's two settings, the overlapped and the skipping
walker's (issue 46.5), the half-memory walker's scaling (C003-5) and the zero-block fraction the seed's default timing
needs; the walkers side by side (walkers_table). Pure."""
from __future__ import annotations

import pandas as pd

from ...analysis import geometric_mean_by_replicate
from ...errors import AnalysisError
from ...inference import Estimate, Scale, geometric_estimate, ratio_estimate
from ...values import Value
from .plan import DEFAULT, SEED_MEMORY, SPINDLE, SSD, STUDY, TUNED

GiB = 1 << 30
# Seed 003's two timings (Lavallee 2013's vmware.log): the defaults 17:39:45.992 → 17:45:19.942, 2048 pages and 2 ms
# 17:35:32.793 → 17:36:56.674
SEED_DEFAULT_S = 333.95
SEED_TUNED_S = 83.881


def _by_replicate(meas: pd.DataFrame, role: str, label: str, column: str) -> pd.Series:
    """The geometric mean of `column` per replicate at one role and grid point."""
    g = meas[(meas.role == role) & (meas.label == label)]
    return geometric_mean_by_replicate(g[column], g.replicate)


def _within_replicates(a: pd.DataFrame, b: pd.DataFrame, role: str, label_a: str, label_b: str,
                       scale: Scale = "log") -> Estimate | None:
    """dump_s of `a` at `label_a` ÷ dump_s of `b` at `label_b` on one role, within each replicate that has both (one
    number per replicate: the geometric mean of its runs), over the replicates; None when no replicate has both."""
    num, den = _by_replicate(a, role, label_a, "dump_s"), _by_replicate(b, role, label_b, "dump_s")
    common = num.index.intersection(den.index)
    return ratio_estimate(num.loc[common].to_numpy(), den.loc[common].to_numpy(), scale) if len(common) else None


def _walker_values(prefix: str, frame: pd.DataFrame, with_ratio: bool) -> list[Value]:
    """replicate_estimates of one walker's runs as `<prefix>.<name>` values (s for the 4 GiB times, × otherwise);
    with_ratio: its tuned ÷ default ratio too."""
    return [Value.of_estimate(f"{STUDY}.{prefix}.{name}", e, *(("s", 0) if name.startswith("seed_memory_s.")
                                                               else ("×", 3)))
            for name, e in sorted(replicate_estimates(frame).items())
            if with_ratio or not name.startswith("tuned_ratio.")]


def replicate_estimates(meas: pd.DataFrame) -> dict[str, Estimate]:
    """The values the claims read, each over the independent replicates (one number per replicate, the geometric
    mean of its runs, then a t pivot on the logs), per role: `seed_memory_s.<role>.<label>` (time per GiB × the
    seed's 4 GiB, s) and `vs_estimate.<role>.<label>` (dump time ÷ n·w) at the seed's two settings, and
    `tuned_ratio.<role>` (the tuned setting's time ÷ the default's within each replicate that has both)."""
    out: dict[str, Estimate] = {}
    with_vs = meas.assign(vs=(meas.dump_s / meas.estimate_s).where(meas.estimate_s > 0))
    for role in sorted(set(meas.role)):
        for p in (DEFAULT, TUNED):
            gib = _by_replicate(meas, role, p.label, "s_per_gib")
            if len(gib):
                out[f"seed_memory_s.{role}.{p.label}"] = geometric_estimate(gib.to_numpy() * SEED_MEMORY / GiB)
            vs = _by_replicate(with_vs, role, p.label, "vs")
            if len(vs):
                out[f"vs_estimate.{role}.{p.label}"] = geometric_estimate(vs.to_numpy())
        if (ratio := _within_replicates(meas, meas, role, TUNED.label, DEFAULT.label)) is not None:
            out[f"tuned_ratio.{role}"] = ratio
    return out


def overlap_values(meas: pd.DataFrame, overlap: pd.DataFrame) -> list[Value]:
    """The overlapped walker (plan.overlap_job: its wait runs from each write's start, model `overlap`) at the seed's
    two settings, each over the replicates: `overlap_walker.vs_estimate.<role>.<label>`, its dump time ÷ its own
    waits n·w (≈ 1 by construction: paced from the job's start, with the first write unpaced, it cannot take less
    than (n − 1)·w, where the seed's default took 0.815 of n·w), `overlap_walker.seed_memory_s.<role>.<label>`
    (time per GiB × 4 GiB) and `overlap_walker.to_after.<role>.<label>`, its time ÷ the grid walker's at the point
    within each replicate that has both. None for a run before the overlapped walker."""
    if overlap.empty:
        return []
    out = _walker_values("overlap_walker", overlap, with_ratio=False)
    for role in sorted(set(overlap.role)):
        for p in (DEFAULT, TUNED):
            if (ratio := _within_replicates(overlap, meas, role, p.label, p.label)) is not None:
                out.append(Value.of_estimate(f"{STUDY}.overlap_walker.to_after.{role}.{p.label}", ratio, "×", 3))
    return out


def half_point_label(half: pd.DataFrame) -> str | None:
    """The grid point the run's half-memory walker ran at (plan.HALF_POINT; the defaults in runs before
    20261130T100712Z-quick, the science plan §18), from its runs; None for a run without them. Parts measured before
    and after that change cannot form one value: AnalysisError."""
    labels = sorted(set(half.label))
    if len(labels) > 1:
        raise AnalysisError(f"the half-memory walker ran at {len(labels)} points ({', '.join(labels)}) in one run "
                            "(parts measured before and after the science plan §18's change?); one is planned")
    return labels[0] if labels else None


def scaling_values(meas: pd.DataFrame, half: pd.DataFrame) -> list[Value]:
    """`scaling.<role>`: the grid walker's time over the whole memory ÷ over half of it at the half-memory walker's
    point (plan HALF_PHASE, half_point_label), within each replicate that has both, in per cent (200: the time
    scales with the memory, seed 003's C003-5), over the replicates. None for a run without the half-memory runs."""
    if (label := half_point_label(half)) is None:
        return []
    # the point beside the value: runs before the science plan §18 measured it at the defaults, later ones at the
    # tuned setting, and `snaptax compare` should not read the two as reruns of one quantity unawares
    return [v for role in sorted(set(half.role))
            if (ratio := _within_replicates(meas, half, role, label, label, "pct_log")) is not None
            for v in (Value.of_estimate(f"{STUDY}.scaling.{role}", ratio, "%", 0),
                      Value(f"{STUDY}.scaling_point.{role}", text=label))]


def skip_values(skip: pd.DataFrame, realised: float | None) -> list[Value]:
    """The skipping walker (plan.skip_job: the memory less its inferred zero share, each skipped block with its wait)
    at the seed's two settings, each over the replicates: `skip_walker.<name>` for each of replicate_estimates'
    names (its time scaled by the whole memory, as the seed's 4 GiB checkpoint is timed: seed_memory_s, vs_estimate
    against the whole memory's n·w, tuned_ratio), and `skip_walker.zero_fraction`, the share it realised (whole
    blocks of the grid's largest). None for a run without it."""
    if skip.empty:
        return []
    out = _walker_values("skip_walker", skip, with_ratio=True)
    if realised is not None:
        out.append(Value(f"{STUDY}.skip_walker.zero_fraction", realised, "", digits=3))
    return out


def inferred_zero_fraction(est: dict[str, Estimate]) -> list[Value]:
    """`implied.zero_fraction.<role>`: the fraction of blocks the seed's walker must have skipped (zero pages, with
    their waits) for its default timing, 333.95 s, on a device that writes like this role's: z = 1 − 333.95 s / T,
    T the measured default time scaled to 4 GiB (seed_memory_s, over the replicates), its interval the same
    transform of T's (z rises with T). An inference from one seed timing (the calibrating one, issue 46.5); with it
    zero_skip predicts the tuned timing as 333.95 s × the measured tuned ÷ default ratio, which is the tuned-ratio
    claim's value: that claim is its held-out test."""
    out = []
    for name, e in sorted(est.items()):
        if name.startswith("seed_memory_s.") and name.endswith(f".{DEFAULT.label}"):
            role = name.split(".")[1]
            low, high = e.interval(0.95)
            out.append(Value(f"{STUDY}.implied.zero_fraction.{role}", 1 - SEED_DEFAULT_S / e.value, "",
                             1 - SEED_DEFAULT_S / low, 1 - SEED_DEFAULT_S / high, e.n, 2, None,
                             "1 − 333.95 s / T over the 95 % interval of T (t over independent runs, log)"))
    return out


WALKERS = (("writes every block", ""), ("wait from each write's start", "overlap_walker."),
           ("skips the inferred zero share", "skip_walker."))


def walkers_table(values: list[Value]) -> pd.DataFrame:
    """Per walker (the grid's, which writes every block and waits after each write; the overlapped one; the one
    skipping the inferred zero share), role and seed setting that the run measured: the time scaled to the seed's
    4 GiB and its ratio to the seed's estimate n·w, each with its 95 % interval over the replicates, beside the
    seed's timing. Only rows the run has (the overlapped walker runs on the mirror; the skipping one where the rig
    has the inferred share)."""
    by_key = {v.key: v for v in values}
    rows = []
    for walker, prefix in WALKERS:
        for role in (SPINDLE, SSD):
            for setting, p, seed in (("default", DEFAULT, SEED_DEFAULT_S), ("tuned", TUNED, SEED_TUNED_S)):
                t = by_key.get(f"{STUDY}.{prefix}seed_memory_s.{role}.{p.label}")
                if t is None:
                    continue
                vs = by_key.get(f"{STUDY}.{prefix}vs_estimate.{role}.{p.label}")
                rows.append({"walker": walker, "role": role, "setting": setting, "point": p.label, "seed_s": seed,
                             "ours_4gib_s": t.formatted_ci(), "vs_estimate": vs.formatted_ci() if vs else ""})
    return pd.DataFrame(rows, columns=["walker", "role", "setting", "point", "seed_s", "ours_4gib_s", "vs_estimate"])


__all__ = ["replicate_estimates", "overlap_values", "scaling_values", "half_point_label", "skip_values",
           "inferred_zero_fraction",
           "walkers_table", "SEED_DEFAULT_S", "SEED_TUNED_S"]
