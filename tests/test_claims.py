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


def test_a_claim_is_measured_unless_it_says_model():
    assert claim(65).basis == "measured" and not claim(65).is_model
    modelled = Claim("t.C002-2a", "key", "Table 1", "x", 3.7, "%", 100, 5, "test", "t.v", "s", basis="model")
    assert modelled.is_model
    with pytest.raises(ValueError, match="basis 'guess'"):
        Claim("t.C002-2a", "key", "Table 1", "x", 3.7, "%", 100, 5, "test", "t.v", "s",
              basis="guess")  # type: ignore[arg-type]
    # the rule says what a model row's verdict means
    assert "model" in VERDICT_RULE


def test_results_rows_carry_basis_and_provisional_and_old_rows_read_as_measured():
    from snaptax.claims import Outcome, from_json
    c = Claim("t.C004-2a", "key", "Fig. 1", "x", 70.0, "%", 100.0, 15.0, "b", "t.v", "s", "lower (no number)",
              basis="model", provisional="predates a fix")
    row = Outcome(c, ours(90, 80, 100)).to_json()
    assert row["basis"] == "model" and row["provisional"] == "predates a fix"
    back = from_json(row).claim
    assert (back.basis, back.provisional, back.seed_label) == ("model", "predates a fix", "C004-2a")
    old = {k: v for k, v in row.items() if k not in ("basis", "provisional")}   # results.json before the fields
    assert from_json(old).claim.basis == "measured" and from_json(old).claim.provisional == ""


def test_a_results_row_with_an_unknown_basis_is_refused_in_one_line():
    from snaptax.claims import Outcome, from_json
    from snaptax.errors import ConfigError
    row = Outcome(claim(65), ours(60, 55, 65)).to_json()
    with pytest.raises(ConfigError, match=r"claims\[t.C001-1\]\.basis"):
        from_json({**row, "basis": "guessed"})


def test_the_effect_ratio_is_ours_over_the_published_effect_with_our_interval_mapped():
    from snaptax.claims import effect_ratio
    # a loss: (ours − 0) / (65 − 0); 10 % and 58 % are both 'same direction' or better, but 0.15 against 0.89
    r = effect_ratio(claim(65), ours(13, 6.5, 19.5))
    assert r is not None and r.key == "claim.t.C001-1.effect_ratio"
    assert r.value == pytest.approx(0.2) and (r.low, r.high) == (pytest.approx(0.1), pytest.approx(0.3))
    assert r.n == 3 and r.digits == 2
    # a ratio below its no-effect value: (ours − 100) / (3.7 − 100); the ends swap
    kept = claim(3.7, no_effect=100.0, tolerance=5.0)
    r = effect_ratio(kept, ours(51.85, 41, 60))
    assert r.value == pytest.approx(0.5) and r.low == pytest.approx(40 / 96.3) and r.high == pytest.approx(59 / 96.3)
    assert r.low < r.value < r.high
    # the other direction is negative; an effect larger than published above 1
    assert effect_ratio(claim(65), ours(-13, -20, -6)).value == pytest.approx(-0.2)
    assert effect_ratio(claim(2.0, no_effect=1.0, tolerance=0.4, unit="×"), ours(2.5, 2.4, 2.6)).value == \
        pytest.approx(1.5)


def test_no_effect_ratio_without_a_published_effect():
    from snaptax.claims import effect_ratio
    assert effect_ratio(claim(0.0), ours(5, 1, 9)) is None                   # 'no impact'
    assert effect_ratio(claim(10.0), ours(5, 1, 9)) is None                  # within the tolerance of no effect
    direction = Claim("t.C004-1", "key", "Fig. 1", "x", 120.0, "%", 100.0, 10.0, "b", "t.v", "s",
                      "overhead (no number)")
    assert effect_ratio(direction, ours(150, 140, 160)) is None              # a placeholder, not the seed's size
    single = effect_ratio(claim(65), Value("t.v", 13, "%", math.nan, math.nan, 1))
    assert single is not None and single.value == pytest.approx(0.2) and not single.has_interval


def test_tallies_and_seed_claims_count_rows():
    from snaptax.claims import Outcome, seed_claims, tally, tally_words
    outs = [Outcome(claim(65), ours(58, 52, 64)), Outcome(claim(65), ours(25, 18, 31)),
            Outcome(claim(35), ours(13, 8, 18)),
            Outcome(Claim("t.x", "k", "w", "s", 2.0, "×", 1.0, 0.4, "b", "t.v", "s", label="C000-1b"),
                    ours(2.0, 1.9, 2.1))]
    assert tally(outs) == {"agrees": 2, "same direction": 1, "differs": 1, "inconclusive": 0}
    assert tally_words(outs) == "2 agree, 1 same direction, 1 differs"
    assert tally_words([]) == ""
    assert seed_claims(outs) == ["C001-1", "C000-1b"]


def test_the_studies_mark_their_model_checks():
    from snaptax.studies.lifecycle.analyse import claims as lifecycle_claims
    from snaptax.studies.tiering.analyse import _claims as tiering_claims
    tiering = {c.seed_label: c.basis for c in tiering_claims({"sas_pool", "tier_pool"})}
    assert tiering == {"C002-1a": "measured", "C002-1b": "measured", "C002-1c": "measured", "C002-2a": "model",
                       "C002-2b": "model", "C002-2c": "model", "C002-3": "model"}
    for c in tiering_claims({"sas_pool", "tier_pool"}):
        assert (".at_tier_speed" in c.value_key or "tier_over_sas" in c.value_key) == c.is_model
    lifecycle = {c.seed_label: c.basis for c in lifecycle_claims()}
    assert lifecycle.pop("C000-6") == "model" and set(lifecycle.values()) == {"measured"}
