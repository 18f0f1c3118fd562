"""The dump-time models' held-out test (issue 48), part of the memory-dump analysis: leave one grid point out
(plan.HELDOUT). Per device role and model (snaptax.models.memory_dump.MODELS), the model is fitted on every other
grid point (all their repeats) and predicts the left-out point's dump time with its 95 % interval
(DumpFit.predict_interval: the delta method on ln T, or the prediction's profile likelihood within the physical
range where a bound is active; an interval without an upper end leaves the point untested); the measurement is the
point's geometric mean over its repeats with its log-t interval. Every grid point is held out once; a left-out point
the remaining ones cannot fit (e.g. the only point without a wait, for the models that need one) is untested, and
the verdict says so. Pure."""
from __future__ import annotations

import math

import pandas as pd

from ...models import heldout as ho, memory_dump as md

PREDICTS = "the dump time at a walker setting it was not fitted to (leave one grid point out)"


def heldout_tests(meas: pd.DataFrame, summary: pd.DataFrame) -> dict[tuple[str, str], ho.HeldOut]:
    """(role, model) → the held-out test over the role's grid points (meas: analyse.measurements, summary:
    analyse.summarize)."""
    out: dict[tuple[str, str], ho.HeldOut] = {}
    for role, g in meas.groupby("role"):
        rows = summary[summary.role == role]
        for model in md.MODELS:
            points = []
            for r in rows.itertuples(index=False):
                rest = g[g.label != r.label]
                block, wait = md.WalkerPoint(int(r.pages), float(r.wait_ms)).block_bytes, float(r.wait_ms) / 1e3
                try:
                    # only the prediction's interval is judged: the parameters' own profile intervals are not
                    # computed (since 2026-12-02; before, one whose inner fit did not converge left the point untested)
                    f = md.fit(model, rest.memory_bytes.to_numpy(), rest.block_bytes.to_numpy(),
                               rest.wait_s.to_numpy(), rest.dump_s.to_numpy(), parameter_intervals=False)
                    t, lo, hi = f.predict_interval(float(g.memory_bytes.iloc[0]), block, wait)
                except ValueError:     # no fit without the point, an unconverged inner fit of a profile, or T ≤ 0
                    points.append(ho.PointError(str(r.label), math.nan, math.nan, 0, float(r.dump_s), math.nan, 0,
                                                int(r.n)))
                    continue
                points.append(ho.point(str(r.label), t, lo, hi, f.dof, float(r.dump_s), float(r.dump_s_low),
                                       float(r.dump_s_high), int(r.n) - 1, int(r.n)))
            out[(str(role), model)] = ho.judge(points, len(g) - int(rows.n.max()) if len(rows) else 0, PREDICTS)
    return out


__all__ = ["PREDICTS", "heldout_tests"]
