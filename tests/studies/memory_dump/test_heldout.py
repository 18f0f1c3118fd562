"""The dump-time models' leave-one-out test on a synthetic grid that follows `after`."""
import math

import numpy as np
import pandas as pd

from snaptax.models import memory_dump as md
from snaptax.studies.memory_dump import analyse as an, heldout as ho_md

MEMORY = 64 << 20


def meas(noise: float = 0.01, seed: int = 4, s0_s: float = 1e-3) -> pd.DataFrame:
    """Three repeats of a 4 × 4 grid on one role, dump times from `after` (s0 = 1 ms, 100 MiB/s), ±noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for pages in (64, 256, 1024, 2048):
        for wait in (0.0, 2.0, 10.0, 25.0):
            p = md.WalkerPoint(pages, wait)
            n = float(md.iterations(MEMORY, p.block_bytes))
            for rep in range(3):
                t = float(md.dump_time_s("after", MEMORY, p.block_bytes, p.wait_s, s0_s=s0_s,
                                         bw_bytes_s=100 * (1 << 20))) * rng.lognormal(0, noise)
                rows.append({"role": "ssd", "device": "ssd", "pages": pages, "wait_ms": wait, "label": p.label,
                             "block_bytes": p.block_bytes, "wait_s": p.wait_s, "replicate": 0, "repeat": rep,
                             "memory_bytes": MEMORY,
                             "dump_s": t, "iterations": n, "estimate_s": n * p.wait_s,
                             "iteration_ms": t / n * 1e3, "s_per_gib": t * (1 << 30) / MEMORY,
                             "busy": 1 - n * p.wait_s / t})
    return pd.DataFrame(rows)


def test_every_grid_point_is_held_out_once_and_the_true_model_predicts():
    m = meas()
    tests = ho_md.heldout_tests(m, an.summarize(m))
    assert set(tests) == {("ssd", model) for model in md.MODELS}
    after = tests[("ssd", "after")]
    assert len(after.points) == 16 and len({p.label for p in after.points}) == 16
    assert after.verdict == "predicts", after.reason
    assert after.fit_points == 45
    # overlap cannot add the wait to the write: it mispredicts where both matter
    assert tests[("ssd", "overlap")].verdict == "descriptive only"


def test_a_point_the_rest_cannot_fit_is_untested():
    m = meas()
    m = m[(m.wait_ms > 0) | (m.pages == 64)]          # one point without a wait left: oversleep needs it to fit
    h = ho_md.heldout_tests(m, an.summarize(m))[("ssd", "oversleep")]
    assert h.verdict == "descriptive only" and "p64-w0" in h.reason
    assert math.isnan([p for p in h.points if p.label == "p64-w0"][0].log_error)


def test_with_a_bound_active_the_held_out_predictions_are_the_profiles_and_the_true_model_still_predicts():
    """A device without a per-write cost (s0 = 0, on its bound): the fits without a point are profiled, their
    predictions' intervals are the profile likelihood's (within what the bounded model can predict), and the true
    model's verdict does not change."""
    m = meas(s0_s=0.0)
    rest = m[m.label != "p64-w25"]
    f = md.fit("after", rest.memory_bytes.to_numpy(), rest.block_bytes.to_numpy(), rest.wait_s.to_numpy(),
               rest.dump_s.to_numpy())
    point = (MEMORY, md.WalkerPoint(64, 25).block_bytes, 0.025)
    est, lo, hi = f.predict_interval(*point)
    assert f.profiled and (est, lo, hi) == f.predict_interval(*point, how="profile")
    assert f.least_s(*point) <= lo < est < hi
    after = ho_md.heldout_tests(m, an.summarize(m))[("ssd", "after")]
    assert after.verdict == "predicts", after.reason
