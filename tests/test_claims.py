"""The verdict rule: effects against their no-effect value, judged on intervals."""
import math

import pytest

from snaptax.claims import VERDICT_RULE, Claim, verdict
from snaptax.values import Value


def claim(published, no_effect=0.0, tolerance=15.0, unit="%"):
    return Claim("t.C001-1", "key", "Table 1", "x", published, unit, no_effect, tolerance, "test", "t.v", "stand-in")


def ours(value, low, high, n=3):
    return Value("t.v", value, "%", low, high, n)


def test_agrees_when_the_estimate_is_in_the_band():
    assert verdict(claim(65), ours(58, 52, 64)) == "agrees"
    # an interval that only touches the band is not agreement: 91 [77, 97] against 65 ± 15
    assert verdict(claim(65), ours(91, 77, 97)) == "same direction"


def test_same_direction_needs_an_effect_by_the_claims_own_scale():
    # 25 % [18, 31] against a published 65 % ± 15: a clear loss (beyond 0 ± 15), smaller than published
    assert verdict(claim(65), ours(25, 18, 31)) == "same direction"
    # 13 % [8, 18] against 35 % ± 15: its interval reaches into the no-effect band, so it is not the published
    # effect in a smaller size; and a small effect whose interval touches 0 is judged the same way, so the verdict
    # does not hinge on whether the lower end of a small effect's interval crosses 0
    assert verdict(claim(35), ours(13, 8, 18)) == "differs"
    assert verdict(claim(35), ours(10, -2, 22)) == verdict(claim(35), ours(9, 3, 15)) == "differs"


def test_ratio_claims_are_judged_against_their_no_effect_value():
    doubling = claim(2.0, no_effect=1.0, tolerance=0.5, unit="×")
    assert verdict(doubling, ours(1.0, 0.98, 1.02)) == "differs"          # no doubling at all
    assert verdict(doubling, ours(1.3, 1.25, 1.35)) == "differs"          # within 1 ± 0.5: not a doubling
    assert verdict(doubling, ours(2.8, 2.7, 2.9)) == "same direction"     # more than doubled
    assert verdict(doubling, ours(1.9, 1.85, 1.95)) == "agrees"
    recovery = claim(100.0, no_effect=100.0, tolerance=10.0)
    assert verdict(recovery, ours(79, 78, 81)) == "differs"               # 'full recovery' is itself no effect


def test_no_effect_claims():
    none = claim(0.0, tolerance=15.0)
    assert verdict(none, ours(2, -2, 5)) == "agrees"
    assert verdict(none, ours(-23, -38, -20)) == "differs"


def test_too_wide_or_too_few_is_inconclusive():
    assert verdict(claim(65), ours(60, 30, 90)) == "inconclusive"
    assert verdict(claim(65), ours(85, 65, 105)) == "inconclusive"      # wide, and reaches into the band
    assert verdict(claim(65), Value("t.v", 60, "%", math.nan, math.nan, 1)) == "inconclusive"
    assert verdict(claim(65), ours(60, 50, 70, n=1)) == "inconclusive"


@pytest.mark.parametrize("word", ["inconclusive", "agrees", "same direction", "differs", "no-effect"])
def test_the_rule_says_what_it_does(word):
    assert word in VERDICT_RULE


def test_a_wide_interval_outside_the_band_still_decides_the_direction():
    # a direction-only claim ('overhead', put at 120 % ± 10 against no effect at 100 %) and an effect far larger:
    # the interval is wider than the band but excludes it, so the published value is excluded
    overhead = claim(120.0, no_effect=100.0, tolerance=10.0)
    assert verdict(overhead, ours(378, 354, 403)) == "same direction"
    # wide and wholly outside the band, but reaching into the no-effect band: not the published effect
    assert verdict(claim(65), ours(10, -10, 30)) == "differs"
    # wide, outside the band, on the other side of no effect
    assert verdict(overhead, ours(60, 35, 85)) == "differs"
    # a wide interval never agrees, even with its estimate in the band
    assert verdict(claim(65), ours(65, 45, 85)) == "inconclusive"


def test_a_claim_names_the_seed_claim_it_tests():
    assert claim(65).seed_label == "C001-1"
    labelled = Claim("t.loss.a", "key", "Table 1", "x", 65, "%", 0, 15, "test", "t.v", "s", label="C001-3")
    assert labelled.seed_label == "C001-3"
    with pytest.raises(ValueError, match="t.loss.a.*label 'a'"):
        Claim("t.loss.a", "key", "Table 1", "x", 65, "%", 0, 15, "test", "t.v", "s")
    with pytest.raises(ValueError, match="'C9-1'"):
        Claim("t.loss.a", "key", "Table 1", "x", 65, "%", 0, 15, "test", "t.v", "s", label="C9-1")


def test_published_values_print_no_more_places_than_the_seed_has():
    from snaptax.claims import published_str
    assert published_str(claim(100 * 210 / 760)) == "27.6 %"
    assert published_str(claim(100 * 28 / 510)) == "5.49 %"
    assert published_str(claim(150.0)) == "150 %" and published_str(claim(0.0)) == "0 %"
    assert published_str(claim(1.0 / 3, unit="×")) == "0.333 ×"
    # a seed's time to the millisecond keeps its places when the claim says so
    timed = Claim("t.C003-1", "key", "log", "x", 333.95, "s", 0, 60, "test", "t.v", "s", published_digits=3)
    assert published_str(timed) == "333.950 s"


def test_a_results_row_without_a_seed_label_is_refused_in_one_line():
    from snaptax.claims import from_json
    from snaptax.errors import ConfigError
    row = {"id": "t.default_4gib", "cite": "k", "where": "log", "statement": "x", "published": 1.0, "unit": "s",
           "no_effect": 0.0, "tolerance": 1.0, "tolerance_basis": "b", "value_key": "t.v", "stand_in": "s",
           "published_text": "", "ours": Value("t.v", 1.0).to_json()}
    with pytest.raises(ConfigError, match=r"claims\[t.default_4gib\]\.label"):
        from_json(row)
    assert from_json({**row, "label": "C003-1"}).claim.seed_label == "C003-1"
