"""Replicates planned from the spread between independent replicates, for agreement and for a direction."""
import numpy as np

from snaptax import inference as inf, power
from snaptax.claims import Claim, Outcome
from snaptax.values import Value


def _outcome(published, samples, tolerance=5.0, direction=0, no_effect=0.0, independent=True, role="judged"):
    c = Claim("t.C001-1", "k", "w", "s", published, "%", no_effect, tolerance, "b", "t.v", "s", direction=direction,
              role=role)
    return Outcome(c, Value.of_estimate("t.v", inf.mean_estimate(samples, independent), "%", 1))


def test_agreement_needs_more_replicates_the_wider_the_spread_and_reaches_its_power():
    narrow = power.plan_line(_outcome(65, [64.0, 65.0, 66.0]))
    wide = power.plan_line(_outcome(65, [60.0, 65.0, 70.0]))
    assert narrow.needed is not None and wide.needed is not None and wide.needed > narrow.needed >= 3
    sd = np.std([60.0, 65.0, 70.0], ddof=1)
    assert inf.tost_power(wide.needed, sd, 5.0) >= power.POWER > inf.tost_power(wide.needed - 1, sd, 5.0)


def test_a_direction_is_planned_at_the_measured_effect_and_not_planned_without_one():
    far = power.plan_line(_outcome(float("nan"), [120.0, 125.0, 130.0], direction=1, no_effect=100.0))
    assert far.needed == 3
    none = power.plan_line(_outcome(float("nan"), [101.0, 102.0, 103.0], direction=1, no_effect=100.0))
    assert none.needed is None and "does not reach" in none.why


def test_no_plan_without_independent_replicates_or_for_a_calibrating_statement():
    assert "no spread" in power.plan_line(_outcome(65, [64.0, 65.0, 66.0], independent=False)).why
    assert "calibrates" in power.plan_line(_outcome(65, [64.0, 65.0, 66.0], role="calibration")).why


def test_no_plan_for_a_statement_the_registration_does_not_judge():
    import dataclasses

    o = _outcome(65, [64.0, 65.0, 66.0])
    unjudged = dataclasses.replace(o, claim=dataclasses.replace(o.claim, unjudged="not registered"))
    line = power.plan_line(unjudged)
    assert line.needed is None and "not registered" in line.why
