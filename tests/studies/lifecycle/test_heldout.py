"""The consolidation model's held-out test (leave one iterative deletion out) on synthetic deletions of known
parameters: a model that generated the data predicts each left-out deletion within the bound; deletions that differ
in a way the model does not have (each its own commit speed) are not predicted; outcomes count against the majority
guess."""
import math

import numpy as np
import pandas as pd
import pytest

from snaptax.models import consolidation as cm, heldout as ho
from snaptax.studies.lifecycle.heldout import heldout_tests

MiB = 1 << 20
T0, C0, B, A = 0.5, 60 * MiB, 0.4 * MiB, 32 * 1024
THETA = 512 * 1024


def synthetic(rates, noise, *, seconds_of=None, seed=0):
    """Deletion and iteration tables as analyse.deletion_tables gives them, one iterative deletion per rate."""
    dels, its = [], []
    for i, r in enumerate(rates):
        t = cm.synthetic_iterations(64 * MiB, [r], t0=T0, c0=C0, b=B, a=A, threshold=THETA, max_iterations=6,
                                    noise=noise, seed=seed + i)
        secs = t["seconds"] if seconds_of is None else seconds_of(t["delta"], r)
        sim = cm.iterate(64 * MiB, A * r, C0 - B * r, THETA, t0=T0, c_idle=C0, max_iterations=6)
        dels.append({"variant": "grid", "index": i, "method": "iterative", "writer_iops": r,
                     "converged": sim.converged, "delta0_mib": 64.0})
        for k, (d, s, g) in enumerate(zip(t["delta"], secs, t["grown"], strict=True)):
            its.append({"variant": "grid", "index": i, "k": k, "writer_iops": r, "delta": d, "seconds": s,
                        "grown": g})
    return pd.DataFrame(dels), pd.DataFrame(its)


def test_the_generating_model_predicts_every_left_out_deletion():
    dels, its = synthetic([5, 10, 20, 30, 40, 60, 80], noise=0.005)
    tests, outcomes = heldout_tests(dels, its, THETA, 6, 0.0)
    for name in ("commit", "growth"):
        h = tests[("consolidation", name)]
        assert h.verdict == ho.PREDICTS, (name, h.reason)
        assert len(h.points) == len(its)
    assert outcomes.tested == 7 and outcomes.predicted == 7


def test_commits_of_another_mechanism_are_not_predicted():
    # each deletion commits at its own speed (a factor the rate does not explain, as drift between timelines would
    # be): the model fitted on the others cannot know the left-out one's
    def seconds_of(d, r):
        return (T0 + np.asarray(d) / (C0 - B * r)) * (1.6 if r in (10, 30, 60) else 0.7)
    dels, its = synthetic([5, 10, 20, 30, 40, 60, 80], noise=0.005, seconds_of=seconds_of)
    tests, _ = heldout_tests(dels, its, THETA, 6, 0.0)
    h = tests[("consolidation", "commit")]
    assert h.verdict == ho.DESCRIPTIVE
    assert abs(h.worst.error_pct) > 10


def test_outcomes_count_against_the_others_majority():
    dels, its = synthetic([5, 10, 20, 30, 40, 60, 80], noise=0.005)
    _, outcomes = heldout_tests(dels, its, THETA, 6, 0.0)
    converged = dels.converged.to_numpy()
    assert 0 < converged.sum() < len(converged)          # both outcomes occur in the grid
    # the others' majority: for each left-out deletion, the outcome most of the other six had
    expected = sum(bool(np.delete(converged, i).mean() > 0.5) == c for i, c in enumerate(converged))
    assert outcomes.majority == expected
    assert "predicted" in outcomes.words("grid")


def test_too_few_deletions_are_not_tested():
    dels, its = synthetic([20], noise=0.0)
    tests, outcomes = heldout_tests(dels, its, THETA, 6, 0.0)
    assert all(h.verdict == ho.DESCRIPTIVE and not h.points for h in tests.values())
    assert outcomes.tested == 0 and outcomes.words("grid") == "converged (not tested)" or \
        outcomes.words("grid").endswith("(not tested)")


@pytest.mark.parametrize("empty", [pd.DataFrame(), pd.DataFrame(columns=["variant", "index", "method"])])
def test_a_run_without_iterative_deletions_has_no_points(empty):
    tests, outcomes = heldout_tests(empty, pd.DataFrame(), THETA, 6, 0.0)
    assert all(not h.points for h in tests.values()) and outcomes.tested == 0
    assert math.isnan(tests[("consolidation", "commit")].rms_pct)
