"""Claims judged by the registration in force when their run was measured: its published value, tolerance and
role replace the analysis's; what it does not register, or registers as unjudged or as another quantity, is not
judged; a calibrating statement is judged until its stand-in's operating point is inferred."""
import numpy as np

from snaptax import judged, registration
from snaptax.claims import Claim, Outcome, verdict
from snaptax.inference import ratio_estimate
from snaptax.registration import Registered, Registration
from snaptax.values import Value


def claim(cid="s.C000-1a", published=100.0, tolerance=10.0, direction=0, text=""):
    return Claim(cid, "zandboer", "Graph 1", "with / before", published, "%", 100.0, tolerance, "chosen",
                 "s.value", "stand", published_text=text, label="C000-1a", direction=direction)


def reg(**kw):
    base = dict(id="s.C000-1a", label="C000-1a", cite="zandboer", where="Graph 1", statement="with / before",
                unit="%", kind="rate_pct", no_effect=100.0, published=100.0, published_text="", precision=2.0,
                precision_basis="a graph", role="judged", stand_in="esx35_redolog")
    base.update(kw)
    return Registration("20990101-1.yaml", "abc", "2099-01-01", {base["id"]: Registered(**base)})


def value(at):
    """Ours over 3 independent replicates at about `at` % (a narrow pct_log interval)."""
    est = ratio_estimate(np.array([at - 0.1, at, at + 0.1]), np.full(3, 100.0), "pct_log")
    return Value.of_estimate("s.value", est, "%")


def test_the_registered_tolerance_replaces_the_analysis_s_and_decides():
    c = judged.claim(claim(tolerance=10.0), reg(), True)
    assert c.tolerance == 5.0 and c.registration == "20990101-1.yaml" and c.pre_registered
    assert "registered" in c.tolerance_basis
    v = value(93.0)
    assert verdict(claim(tolerance=10.0), v) == "agrees"       # inside 100 ± 10 (the analysis's own tolerance)
    assert verdict(c, v) == "differs"                          # wholly below 100 − 5 (the registered one)


def test_what_is_not_registered_or_registered_unjudged_is_not_judged():
    v = value(93.0)
    c = judged.claim(claim(cid="s.other"), reg(), True)
    assert c.unjudged == judged.NOT_REGISTERED and verdict(c, v) == "not judged"
    assert Outcome(c, v).judgeable == judged.NOT_REGISTERED
    u = judged.claim(claim(), reg(role="unjudged", reason="no stand-in"), True)
    assert verdict(u, v) == "not judged" and Outcome(u, v).judgeable == "no stand-in"


def test_another_quantity_than_the_registered_one_is_not_judged():
    down = claim(published=90.0, direction=-1, text="rises (no number)")
    c = judged.claim(down, reg(published=float("nan"), direction=1), True)
    assert c.unjudged == judged.OTHER_QUANTITY
    assert judged.claim(claim(), reg(published=float("nan"), direction=1), True).unjudged == judged.OTHER_QUANTITY
    same = judged.claim(down, reg(published=float("nan"), direction=-1), True)
    assert not same.unjudged and same.direction == -1


def test_a_calibrating_statement_calibrates_only_once_its_operating_point_is_inferred():
    r = reg(role="calibration")
    v = value(93.0)
    assert verdict(judged.claim(claim(), r, True), v) == "differs"
    assert verdict(judged.claim(claim(), r, True, inferred=("esx35_redolog",)), v) == "calibration"


def test_a_run_before_any_registration_is_judged_by_the_newest_and_marked():
    newest = registration.newest()
    found, pre = judged.in_force(None)
    assert (found.file if found else None) == (newest.file if newest else None) and not pre
    if newest is not None:
        found, pre = judged.in_force({"file": newest.file, "sha256": newest.sha256})
        assert found == newest and pre
        assert judged.in_force({"file": "gone.yaml", "sha256": "0" * 64}) == (newest, False)


def test_a_run_is_judged_by_what_its_manifest_recorded():
    newest = registration.newest()
    if newest is None:
        return
    found = [Outcome(claim(cid=next(iter(newest.claims))), value(93.0))]
    by_run = judged.for_run(found, {"file": newest.file, "sha256": newest.sha256})
    assert by_run == judged.outcomes(found, newest, True)
    assert by_run[0].claim.pre_registered
    assert not judged.for_run(found, None)[0].claim.pre_registered
