"""What every study's analysis returns, and the tables all of them share.

A study's `analyse(record)` is pure: a published run in, an Analysis out (study-specific tables and fits as
fields of a subclass, plus the Values the paper and notebooks quote and the Outcomes of the claims it tests).
Ratios are only ever formed within one run (one session on one rig), never across runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import operatingpoints
from .claims import Outcome
from .record import RunRecord, short_run_id
from .values import DerivedValues, Value


@dataclass
class Analysis:
    record: RunRecord
    values: list[Value] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def study(self) -> str:
        return self.record.manifest.study

    def value(self, key: str) -> Value:
        for v in self.values:
            if v.key == key:
                return v
        raise KeyError(key)

    def derived_values(self) -> DerivedValues:
        m = self.record.manifest
        r = DerivedValues(m.study, m.run_id, m.rig, m.profile.name)
        r.add(run_values(self.record))
        r.add(self.values)
        r.claims = [o.to_json() for o in self.outcomes]
        return r

    def outcomes_table(self) -> pd.DataFrame:
        """The claims this study tests: published (cited), ours with 95 % interval, stand-in, verdict — judged by
        the registration the run was measured under and the operating points it measured at (snaptax.judged), each
        claim by itself: the paper's verdicts are Holm-adjusted within each seed's family, which a notebook's table
        of one study is not."""
        from . import judged

        m = self.record.manifest
        return outcomes_frame(judged.for_run(self.outcomes, m.registration, operatingpoints.used_in(m.parameters)))


def run_values(record: RunRecord) -> list[Value]:
    """Values every run provides (<study>.run.*): identity, device, tool versions, size, emulator validity. The id is
    the one the paper prints (record.short_run_id: a set of part runs by its first part's start and its count); the
    full id is DerivedValues.run_id."""
    m = record.manifest
    k = f"{m.study}.run"
    late = record.lateness()
    worst = float(late.lateness_fraction.max()) * 100 if not late.empty else math.nan
    # against each measurement's own class reference (record.lateness: the figure the class limits bound)
    worst_share = float(late.lateness_share.max()) * 100 if not late.empty else math.nan
    # flagged fills: the writes that lay a device out before anything is timed (phases fill and prefill), which no
    # ratio or claim reads
    flagged_fills = sum(1 for x in record.measurements if x.flagged and x.phase in ("fill", "prefill"))
    by_phase: dict[str, int] = {}
    for x in record.measurements:
        if x.flagged:
            by_phase[x.phase] = by_phase.get(x.phase, 0) + 1
    return [
        Value(f"{k}.id", text=short_run_id(m.run_id)), Value(f"{k}.profile", text=m.profile.name),
        Value(f"{k}.rig", text=m.rig), Value(f"{k}.device", text=m.device_label()),
        Value(f"{k}.emulated", text="emulated" if m.emulated else "real"),
        Value(f"{k}.fio", text=m.tool("fio")), Value(f"{k}.qsd", text=m.tool("qemu-storage-daemon")),
        Value(f"{k}.kernel", text=m.provenance.get("host", {}).get("kernel", "?")),
        Value(f"{k}.commit", text=m.commit),
        Value(f"{k}.measurements", float(m.measurements), "fio runs"),
        Value(f"{k}.runtime_s", float(m.profile.runtime_s), "s"),
        Value(f"{k}.repeats", float(m.profile.repeats), ""),
        Value(f"{k}.disk_mib", m.profile.disk_size / 2**20, "MiB"),
        Value(f"{k}.worst_lateness_pct", worst, "%", digits=2),
        Value(f"{k}.worst_lateness_share_pct", worst_share, "%", digits=2),
        Value(f"{k}.flagged", float(late.flagged.sum()) if not late.empty else 0.0, "measurements"),
        Value(f"{k}.flagged_fills", float(flagged_fills), "measurements"),
        # the phases the flagged measurements are in, as "<phase> <count>", for the sentence that says which
        Value(f"{k}.flagged_phases", text=", ".join(f"{p} {n}" for p, n in sorted(by_phase.items())) or "none"),
        Value(f"{k}.emulated_measurements", float(len(late)), "measurements"),
        # the stand-ins this run measured at their inferred operating points, with the settings realised (their
        # calibrating statements are calibration for this run only: snaptax.judged)
        Value(f"{k}.{operatingpoints.RUN_VALUE}",
              text=operatingpoints.shown(operatingpoints.settings_in(m.parameters))),
    ]


def geometric_mean_by_replicate(values: pd.Series, replicate: pd.Series | pd.Index) -> pd.Series:
    """exp(mean log) of the positive `values` per replicate (`replicate`: each value's replicate, aligned with it),
    indexed by replicate: one number per independent replicate, for inference's t pivots over them. Values ≤ 0 or
    missing are left out."""
    ok = (values > 0).to_numpy()
    return np.exp(np.log(values[ok]).groupby(np.asarray(replicate)[ok]).mean())


def outcomes_frame(outcomes: list[Outcome]) -> pd.DataFrame:
    from .claims import ours_str, published_str, tolerance_str

    return pd.DataFrame([{"claim": o.claim.statement, "source": f"{o.claim.cite}, {o.claim.where}",
                          "published": published_str(o.claim), "ours [95 % CI]": ours_str(o),
                          # measured, or a model's prediction (claims.Claim.basis); a provisional row says so
                          "ours is": o.claim.basis + (" (provisional)" if o.claim.provisional else ""),
                          "tolerance": tolerance_str(o.claim), "stand-in": o.claim.stand_in, "verdict": o.verdict}
                         for o in outcomes],
                        columns=["claim", "source", "published", "ours [95 % CI]", "ours is", "tolerance",
                                 "stand-in", "verdict"])
