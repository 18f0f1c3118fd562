"""The statement's own work in a database-snapshot run (science plan §24), part of the db_snapshots analysis: its
length per page and the time scale it stands at per snapshot device, its share of a run without snapshots, the
set-up's sentences, and the runs as they would have gone at another module write rate (shifted_runs: the
sensitivity of the verdicts to the rate the time scale assumes). Pure."""
from __future__ import annotations

import math

import pandas as pd

from ...values import Value, format_number
from .plan import (
    SEED_BASELINE_S,
    SEED_MODULE_WRITE_MB_S,
    SNAPSHOT_DEVICES,
    STATEMENT_S_PER_PAGE,
    STUDY,
    DbSnapshotParameters,
)

RAID5, SSD = SNAPSHOT_DEVICES
# The other end of the datasheet's write rate of a 320 GB ioDrive module ("500-600 MB/s writes", docs/datasheets.md
# A.5): the time scale assumes the lower 500 MB/s; at 600 a capped device's scale, and its statement's work, are a
# fifth longer.
ALT_MODULE_WRITE_MB_S = 600.0


def time_scale_of(p: DbSnapshotParameters, device: str) -> float:
    """The time scale the run's statement work stood at on `device` (nan without statement work)."""
    ns = p.statement_of(device)
    return ns / 1e9 / STATEMENT_S_PER_PAGE if ns else math.nan


def shifted_runs(runs: pd.DataFrame, p: DbSnapshotParameters, module_mb_s: float = ALT_MODULE_WRITE_MB_S) \
        -> pd.DataFrame:
    """The runs as they would have gone had the time scale assumed a module writing at `module_mb_s`: on a device
    whose scale comes from its write cap (a scale other than 1; the emulated RAID5 keeps its drives' own time, 1)
    every run's duration lengthened by the statement's own work it did (statement_s) times (module_mb_s / the rate
    assumed − 1). With one pusher the statement's work is in series with the copies (science plan §24; the copy-work
    model's β near 1 on both devices), so the work adds to every run alike and the copies' time is unchanged;
    durations of runs without the counter become nan."""
    factor = module_mb_s / SEED_MODULE_WRITE_MB_S - 1
    out = runs.copy()
    for device in SNAPSHOT_DEVICES:
        scale = time_scale_of(p, device)
        if math.isfinite(scale) and round(scale, 6) != 1:
            rows = out.device == device
            out.loc[rows, "duration_s"] = out.loc[rows, "duration_s"] + factor * out.loc[rows, "statement_s"]
    return out


def statement_values(runs: pd.DataFrame, p: DbSnapshotParameters) -> list[Value]:
    """The statement's own work: per page (µs) and as the time scale it stands at, per device, and its share of a
    run without snapshots (statement_s over the duration, mean over those runs: near 100 % the baseline is the
    statement's, as in the seed; nan for runs before the statement's work), with the set-up's sentence."""
    out = []
    for device in SNAPSHOT_DEVICES:
        ns = p.statement_of(device)
        out.append(Value(f"{STUDY}.{device}.statement_us_per_page", ns / 1e3 if ns else math.nan, "µs", digits=1))
        out.append(Value(f"{STUDY}.{device}.time_scale", time_scale_of(p, device), "",
                         digits=1))
        k0 = runs[(runs.device == device) & (runs.k == 0)] if not runs.empty else runs
        share = (100 * float(k0.statement_s.mean() / k0.duration_s.mean())
                 if ns and len(k0) and k0.statement_s.notna().all() else math.nan)
        out.append(Value(f"{STUDY}.{device}.k0.statement_share", share, "%", digits=0))
    out.append(Value(f"{STUDY}.statement_clause", text=statement_clause(p)))
    return out


def statement_clause(p: DbSnapshotParameters) -> str:
    """The statement's own work, for the set-up's sentence after the pusher's."""
    if not p.statement_ns:
        return ("The statement did no work of its own: a run without snapshots took the table's writes' time, and the "
                "copies ran beside those writes instead of in series with the statement's work")
    us = {d: format_number(p.statement_of(d) / 1e3, 1) for d in SNAPSHOT_DEVICES}
    return ("Before a page's copies the pusher first spends the statement's own work on it, a sleep of "
            f"{us[RAID5]}\u2009µs per page with the snapshots on the RAID5 and {us[SSD]}\u2009µs on the SSD pair: "
            f"SQL Server's thread formats each page and pushes its copies in series, and we take the seed's "
            f"{format_number(SEED_BASELINE_S, 1)}\u2009s to be that work's time (the table's writes to its two data "
            "cards take a tenth of it, asynchronously), spread over the table's pages and, on the SSD pair, "
            "scaled by how much slower than one ioDrive module its caps make it (the seed's snapshot card is taken "
            "to write like one, as its 'equivalent in performance' says; no rate of it is published), so that the "
            "copies meet the statement's work in the seed's proportion")


def write_alone_clause(alone: Value) -> str:
    """What the SSD's copy write alone (without its commit; not judged) says about C004-4's verdict, which counts
    the commit with the write as declared: the sentence follows the value's interval against half."""
    side = alone.side_of(50)
    if side.startswith("lies below"):
        return "on the SSD the verdict rests on counting the commit with the write, as declared"
    if side.startswith("lies above"):
        return "on the SSD the copy's write alone is more than half as well, so the verdict does not rest on the commit"
    return "on the SSD the copy's write alone may be more or less than half"


__all__ = ["ALT_MODULE_WRITE_MB_S", "time_scale_of", "shifted_runs", "statement_values", "statement_clause",
           "write_alone_clause"]
