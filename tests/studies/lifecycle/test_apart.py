"""The consolidation model with parameters measured apart: recovered from repeats made with known parameters, and
its held-out tests on deletions made by the same mechanism (predicts) and by another (does not)."""
import math

import numpy as np
import pandas as pd
import pytest

from snaptax import profiles
from snaptax.models import consolidation as cm, heldout as ho
from snaptax.studies.lifecycle import apart, plan as planmod

MiB = 1 << 20
S = planmod.scale(profiles.get("quick"))
P = planmod.parameters(S, "raid1_10k")
PATTERN = apart.write_pattern(P)
TRUTH = {"t0": 1.5, "c0": 60.0 * MiB, "r_max": 95.0}
C_HELPER = 2.0 * MiB


def apart_rows(noise: float = 0.01, repeats: int = 3, seed: int = 0, helper: bool = False) -> pd.DataFrame:
    """The apart variant's table as a run with the TRUTH parameters measures it (relative noise on each number):
    the first design's (its overlay's commit 'idle_commit'), or with `helper` the second's (delta_commit and a
    helper's commit at C_HELPER)."""
    rng = np.random.default_rng(seed)

    def jitter(x: float) -> float:
        return x * (1 + noise * rng.standard_normal())
    rows = []
    full = 2.0 * S.file_bytes
    for i in range(repeats):
        t0 = jitter(TRUTH["t0"])
        writes = TRUTH["r_max"] * S.steady_s
        rows += [{"repeat": i, "step": "empty_commit", "seconds": t0, "committed_bytes": 0.0},
                 {"repeat": i, "step": "writer_alone", "grown_bytes": jitter(float(PATTERN.grown(writes))),
                  "writer_iops": jitter(TRUTH["r_max"]), "writes": writes},
                 {"repeat": i, "step": "delta_commit" if helper else "idle_commit",
                  "seconds": t0 + jitter(full / TRUTH["c0"]), "committed_bytes": full}]
        if helper:
            grown = float(PATTERN.grown(writes))
            rows.append({"repeat": i, "step": "helper_commit", "seconds": t0 + jitter(grown / C_HELPER),
                         "committed_bytes": grown})
    return pd.DataFrame(rows, columns=["repeat", "step", "seconds", "committed_bytes", "grown_bytes", "writer_iops",
                                       "writes"])


def deletions_by(params: cm.ApartParameters, rates: list[float], slower: float = 1.0
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Grid deletions simulated from `params` (commits `slower` times slower than they say) as deletion_tables
    gives them."""
    helper = params.c_helper and cm.Estimate(params.c_helper.value / slower, math.nan, math.nan)
    slow = cm.ApartParameters(params.t0, cm.Estimate(params.c0.value / slower, math.nan, math.nan), params.r_max,
                              params.pattern, params.dof, helper)
    dels, its = [], []
    for i, r in enumerate(rates):
        d0 = 2.0 * S.file_bytes
        tr = slow.simulate(d0, r, float(P.helper_threshold_bytes), max_iterations=S.max_iterations,
                           max_stun_s=float(P.max_consolidate_s), load_s=S.grid_window_s - 1.0)
        dels.append({"variant": "grid", "load": "grid", "method": "iterative", "index": i + 1, "writer_iops": r,
                     "converged": tr.converged, "seconds": tr.total_s, "delta0_mib": d0 / MiB})
        grown = list(tr.committed[1:]) + [tr.remaining]
        for k, (dk, tk, g) in enumerate(zip(tr.committed, tr.seconds, grown, strict=True)):
            its.append({"variant": "grid", "index": i + 1, "k": k, "writer_iops": r, "delta": dk, "seconds": tk,
                        "grown": g})
    return pd.DataFrame(dels), pd.DataFrame(its)


def test_the_parameters_measured_apart_are_recovered():
    ap = apart.measured(apart_rows(), PATTERN)
    assert ap is not None and ap.dof == 2
    for name, truth in TRUTH.items():
        e = getattr(ap.parameters, name)
        assert e.value == pytest.approx(truth, rel=0.05)
        assert e.low < e.value < e.high
    assert ap.growth_ratio.value == pytest.approx(1.0, rel=0.05)
    assert 0 < ap.commit_spread < 0.05 and 0 < ap.growth_spread < 0.05


def test_fewer_than_two_repeats_measure_nothing():
    assert apart.measured(apart_rows(repeats=1), PATTERN) is None
    assert apart.measured(apart_rows().iloc[0:0], PATTERN) is None


def test_deletions_of_the_measured_mechanism_are_predicted():
    ap = apart.measured(apart_rows(), PATTERN)
    assert ap is not None
    dels, its = deletions_by(ap.parameters, [5.0, 20.0, 40.0])
    tests, outcomes = apart.apart_tests(ap, dels, its, P)
    assert set(tests) == {(apart.MODEL, "commit"), (apart.MODEL, "growth"), (apart.MODEL, "time")}
    for name in ("commit", "growth", "time"):
        assert tests[(apart.MODEL, name)].verdict == ho.PREDICTS, tests[(apart.MODEL, name)].reason
    assert outcomes.predicted == len(outcomes.rows) == 3


def test_deletions_twice_as_slow_are_not_predicted():
    ap = apart.measured(apart_rows(), PATTERN)
    assert ap is not None
    dels, its = deletions_by(ap.parameters, [5.0, 20.0, 40.0], slower=2.0)
    tests, _ = apart.apart_tests(ap, dels, its, P)
    assert tests[(apart.MODEL, "commit")].verdict == ho.DESCRIPTIVE
    assert tests[(apart.MODEL, "time")].verdict == ho.DESCRIPTIVE


def test_values_name_the_model_and_seed_000_s_two_deletions():
    ap = apart.measured(apart_rows(), PATTERN)
    assert ap is not None
    dels, its = deletions_by(ap.parameters, [5.0, 20.0])
    tests, outcomes = apart.apart_tests(ap, dels, its, P)
    v = {x.key: x for x in apart.apart_values("lifecycle", ap, tests, outcomes)}
    assert v["lifecycle.consolidation_apart.heldout.commit.verdict"].text == ho.PREDICTS
    assert v["lifecycle.consolidation_apart.c0_mib_s"].value == pytest.approx(60.0, rel=0.05)
    assert v["lifecycle.consolidation_apart.light.outcome"].text == "not measured"
    assert v["lifecycle.consolidation_apart.outcomes_tested"].value == 2


def test_the_pattern_is_the_plan_s():
    assert PATTERN.bs == planmod.BS and PATTERN.random_fraction == pytest.approx(0.7)
    assert PATTERN.cluster == 64 * 1024 and PATTERN.region == S.file_bytes
    assert PATTERN.metadata == PATTERN.cluster          # the writer's file lies under one L2 table


def test_the_second_design_measures_a_helper_s_throughput_and_predicts_with_it():
    ap = apart.measured(apart_rows(helper=True), PATTERN)
    assert ap is not None and ap.parameters.c_helper is not None
    assert ap.parameters.c_helper.value == pytest.approx(C_HELPER, rel=0.05)
    assert ap.parameters.c0.value == pytest.approx(TRUTH["c0"], rel=0.05)
    dels, its = deletions_by(ap.parameters, [5.0, 20.0, 40.0])
    tests, outcomes = apart.apart_tests(ap, dels, its, P)
    for name in ("commit", "growth", "time"):
        assert tests[(apart.MODEL, name)].verdict == ho.PREDICTS, tests[(apart.MODEL, name)].reason
    # the same deletions judged by the first design's one throughput (no helper's) are not predicted
    one = apart.measured(apart_rows(), PATTERN)
    assert one is not None
    assert apart.apart_tests(one, dels, its, P)[0][(apart.MODEL, "commit")].verdict == ho.DESCRIPTIVE
    v = {x.key: x for x in apart.apart_values("lifecycle", ap, tests, outcomes)}
    assert v["lifecycle.consolidation_apart.c_helper_mib_s"].value == pytest.approx(2.0, rel=0.05)


def test_an_iteration_s_growth_is_predicted_from_the_writes_counted_not_rate_times_time():
    """A writer that stopped halfway through each iteration (its load window ended) grew each helper by half the
    writes: predicted from the writes counted in the window, and not from rate × time."""
    ap = apart.measured(apart_rows(helper=True), PATTERN)
    assert ap is not None
    dels, its = deletions_by(ap.parameters, [20.0, 40.0])
    its["writes"] = its.writer_iops * its.seconds / 2
    its["grown"] = [float(PATTERN.grown(w)) for w in its.writes]
    counted, _ = apart.apart_tests(ap, dels, its, P)
    assert counted[(apart.MODEL, "growth")].verdict == ho.PREDICTS, counted[(apart.MODEL, "growth")].reason
    timed, _ = apart.apart_tests(ap, dels, its.drop(columns="writes"), P)
    assert timed[(apart.MODEL, "growth")].verdict == ho.DESCRIPTIVE
