"""Held-out tests on synthetic predictions and measurements with known errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from snaptax.models import heldout as ho
from snaptax.values import Value


def _measured(value: float, rel_half: float, n: int) -> tuple[float, float, float, float]:
    """A measured value with a log-symmetric 95 % interval of relative half-width rel_half over n repeats."""
    return value, value / (1 + rel_half), value * (1 + rel_half), n - 1


def test_log_se_inverts_a_log_t_interval():
    x = np.log([10.0, 11.0, 9.5, 10.4])
    se = x.std(ddof=1) / 2
    h = sps.t.ppf(0.975, 3) * se
    m = math.exp(x.mean())
    assert ho.log_se(m, m * math.exp(-h), m * math.exp(h), 3) == pytest.approx(se)
    assert math.isnan(ho.log_se(m, math.nan, math.nan, 3)) and math.isnan(ho.log_se(m, 1, 2, 0))


def test_an_exact_model_within_a_narrow_measurement_predicts():
    pts = [ho.point(f"p{i}", 100.0, 99.0, 101.0, 10, *_measured(100.0 * (1 + 0.01 * i), 0.02, 8)) for i in range(3)]
    h = ho.judge(pts, fit_points=12, predicts="T at the other grid points")
    assert h.verdict == ho.PREDICTS and h.worst is not None and h.worst.label == "p2"
    assert h.worst.error_pct == pytest.approx(100 * (100 / 102 - 1))


def test_a_biased_model_is_descriptive_and_says_where():
    pts = [ho.point("near", 100.0, 99.0, 101.0, 10, *_measured(101.0, 0.02, 8)),
           ho.point("far", 100.0, 99.0, 101.0, 10, *_measured(130.0, 0.02, 8))]
    h = ho.judge(pts, 10, "x")
    assert h.verdict == ho.DESCRIPTIVE and "far" in h.reason and "near" not in h.reason
    q = h.quoted()
    assert q["error"].value == pytest.approx(100 * (100 / 130 - 1)) and q["error"].high < 0


def test_a_wide_interval_is_not_evidence_of_prediction():
    """An unbiased model whose held-out measurement is too uncertain to show it is within the bound: descriptive."""
    h = ho.judge([ho.point("p", 100.0, 99.0, 101.0, 10, *_measured(100.0, 0.3, 3))], 5, "x")
    assert h.verdict == ho.DESCRIPTIVE


def test_the_boundary_is_the_90_percent_interval():
    """Error exactly e with se s, large dof: predicts iff e + z(0.95)·s < ln 1.1."""
    b = math.log(1 + ho.BOUND)
    s = 0.01
    z = sps.t.ppf(0.95, 1e6)
    for e, expect in ((b - z * s - 1e-4, True), (b - z * s + 1e-4, False)):
        p = ho.PointError("p", 100 * math.exp(e), 0.0, math.nan, 100.0, s, 1e6)
        assert p.within(ho.BOUND) is expect
    # symmetric below
    p = ho.PointError("p", 100 * math.exp(-b + z * s + 1e-4), 0.0, math.nan, 100.0, s, 1e6)
    assert p.within(ho.BOUND)


def test_points_without_an_interval_or_no_points_are_untested():
    h = ho.judge([ho.point("one run", 100.0, 99.0, 101.0, 10, 100.0, math.nan, math.nan, 0)], 5, "x")
    assert h.verdict == ho.DESCRIPTIVE and "one run" in h.reason
    h = ho.judge([ho.PointError("n5", -50.0, 0.1, 5, 100.0, 0.1, 5)], 5, "x")
    assert h.verdict == ho.DESCRIPTIVE and h.reason == "the prediction is not positive at n5"
    h = ho.judge([], 5, "x", not_tested="smoke has no held-out chain lengths")
    assert h.verdict == ho.DESCRIPTIVE and h.reason == "smoke has no held-out chain lengths"
    assert math.isnan(h.quoted()["error"].value) and h.quoted()["n"].value == 0


def test_welch_dof_and_coverage_of_the_error_interval():
    """Simulated: true prediction error 0; the 95 % interval of e covers 0 in about 95 % of draws."""
    rng = np.random.default_rng(1)
    covered = 0
    for _ in range(2000):
        y = rng.normal(0, 0.05, 4)
        p = rng.normal(0, 0.03, 6)
        pe = ho.PointError("p", math.exp(p.mean()), p.std(ddof=1) / math.sqrt(6), 5, math.exp(y.mean()),
                           y.std(ddof=1) / 2, 3)
        lo, hi = pe.interval()
        covered += lo <= 0 <= hi
    assert 0.93 < covered / 2000 < 0.975


def test_quoted_makes_values():
    h = ho.judge([ho.point("p", 100.0, 99.0, 101.0, 10, *_measured(100.0, 0.02, 8))], 5, "the dump time")
    vals = [Value(f"study.after.heldout.{k}", **q._asdict()) for k, q in h.quoted().items()]
    by = {v.key.rsplit(".", 1)[1]: v for v in vals}
    assert by["verdict"].text == "predicts" and by["bound"].value == pytest.approx(10)
    assert by["error"].has_interval and by["predicts"].text == "the dump time"
    with pytest.raises(ValueError):
        ho.judge([], 1, "x", bound=0)


def test_a_reason_names_a_few_points_and_counts_many():
    pts = [ho.point(f"p{i}", 100.0, 99.0, 101.0, 10, *_measured(130.0, 0.02, 8)) for i in range(20)]
    h = ho.judge(pts, 10, "x")
    assert h.reason.endswith("at 20 of the 20 points (p0, p1, p2, p3, p4, …)")
