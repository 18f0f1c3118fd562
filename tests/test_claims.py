"""The verdict rule: two one-sided tests on independent replicates, against the published band or, for a direction,
the smallest effect that matters; not judged below three independent runs; Holm within each seed's family."""
import math

import numpy as np
import pytest

from snaptax import inference as inf
from snaptax.claims import (
    VERDICT_RULE,
    Claim,
    Outcome,
    adjusted,
    family_verdicts,
    judgeable,
    same_direction,
    tests as claim_tests,
    verdict,
)
from snaptax.values import Value


def claim(published, no_effect=0.0, tolerance=5.0, unit="%", text="", label="C001-1", role="judged", direction=0):
    return Claim(f"t.{label}", "key", "Table 1", "x", published, unit, no_effect, tolerance, "test", "t.v",
                 "stand-in", text, label=label, role=role, direction=direction)


def ours(samples, independent=True, scale="linear"):
    """Our value over replicates: their mean (linear) or a loss from per-replicate ratios (loss_log)."""
    est = (inf.mean_estimate(samples, independent) if scale == "linear"
           else inf.ratio_estimate(samples, [1.0] * len(samples), scale, independent))
    return Value.of_estimate("t.v", est, "%", 1)


def plain(value, low, high, n=3):
    """A value with an interval and no pivot (what the effect ratio and the printed rows read)."""
    return Value("t.v", value, "%", low, high, n)


def shifted(center, spread, n=4):
    """n replicates around `center` with sample sd `spread` (exactly)."""
    z = np.linspace(-1, 1, n)
    return center + spread * z / z.std(ddof=1)


def test_agrees_exactly_when_the_90_percent_interval_lies_in_the_band():
    c = claim(65)                                    # band [60, 70]
    v = ours(shifted(65, 2.0))
    lo90, hi90 = v.estimate.interval(0.90)
    assert 60 < lo90 and hi90 < 70 and verdict(c, v) == "agrees"
    # move the replicates until the 90 % interval's upper end crosses the band's: agreement stops there
    half = (hi90 - lo90) / 2
    inside = ours(shifted(70 - half - 0.01, 2.0))
    across = ours(shifted(70 - half + 0.01, 2.0))
    assert verdict(c, inside) == "agrees" and verdict(c, across) == "inconclusive"


def test_differs_exactly_when_the_95_percent_interval_lies_outside_the_band():
    c = claim(65)
    v = ours(shifted(90, 2.0))
    lo95, hi95 = v.estimate.interval(0.95)
    half = (hi95 - lo95) / 2
    assert verdict(c, ours(shifted(70 + half + 0.01, 2.0))) == "differs"
    assert verdict(c, ours(shifted(70 + half - 0.01, 2.0))) == "inconclusive"
    assert verdict(c, ours(shifted(60 - half - 0.01, 2.0))) == "differs"      # below the band too


def test_a_wide_interval_neither_agrees_nor_differs():
    assert verdict(claim(65), ours(shifted(65, 20.0))) == "inconclusive"


def test_a_direction_is_judged_against_the_smallest_effect_that_matters_never_a_placeholder():
    up = claim(math.nan, no_effect=100.0, tolerance=5.0, text="overhead (no number)", label="C004-1", direction=1)
    assert verdict(up, ours(shifted(378, 10.0))) == "agrees"                 # far beyond 105 on the claimed side
    assert verdict(up, ours(shifted(103, 0.5))) == "differs"                 # inside the no-effect band
    assert verdict(up, ours(shifted(90, 2.0))) == "differs"                  # the other side
    assert verdict(up, ours(shifted(106, 3.0))) == "inconclusive"            # straddles 105
    down = claim(math.nan, no_effect=100.0, tolerance=5.0, text="lower (no number)", label="C004-2a", direction=-1)
    assert verdict(down, ours(shifted(60, 3.0))) == "agrees"
    assert claim_tests(down, ours(shifted(60, 3.0)))[0] < 0.05


def test_a_loss_is_judged_on_its_own_scale():
    c = claim(65)
    v = ours([0.34, 0.35, 0.36, 0.35], scale="loss_log")                  # with / without of 4 replicates
    assert v.value == pytest.approx(65, abs=0.2) and verdict(c, v) == "agrees"


def test_too_few_or_dependent_samples_are_not_judged():
    assert verdict(claim(65), ours([64, 65])) == "not judged"                # n = 2
    assert judgeable(ours([64, 65])) == "n < 3"
    within = ours(shifted(65, 1.0, n=30), independent=False)                 # per-second samples of one run
    assert verdict(claim(65), within) == "not judged" and judgeable(within) == "not independent runs"
    plain = Value("t.v", 65, "%", 60, 70, 8)                                 # an interval without a pivot
    assert verdict(claim(65), plain) == "not judged"


def test_a_calibrating_statement_is_never_judged():
    assert verdict(claim(65, role="calibration"), ours(shifted(65, 1.0))) == "calibration"


def test_holm_within_a_seed_s_family_can_take_an_agreement_back():
    """Two claims whose agreement p-values are both just below 0.05: alone each agrees; in one family of two Holm
    doubles the smaller, so neither does; a claim of another seed is its own family."""
    v = ours(shifted(65, 2.0))
    c = claim(65)
    p = claim_tests(c, v)[0]
    margin = 0.0
    for margin in np.linspace(0, 10, 2001):
        if claim_tests(claim(65, tolerance=5.0 - 2.0 + margin), v)[0] < 0.05:
            break
    tight = claim(65, tolerance=5.0 - 2.0 + margin)
    assert p < 0.05 and claim_tests(tight, v)[0] > 0.025
    outs = [Outcome(tight, v), Outcome(tight, v), Outcome(claim(65, label="C002-1a"), v)]
    assert [o.verdict for o in outs] == ["agrees"] * 3
    assert family_verdicts(outs) == ["inconclusive", "inconclusive", "agrees"]
    assert [o.verdict for o in adjusted(outs)] == family_verdicts(outs)


def test_same_direction_is_a_secondary_column():
    assert same_direction(claim(65), ours(shifted(25, 2.0))) is True
    assert same_direction(claim(65), ours(shifted(-25, 2.0))) is False
    assert same_direction(claim(0), ours(shifted(5, 2.0))) is None          # the published value is no effect


@pytest.mark.parametrize("word", ["agrees", "differs", "inconclusive", "not judged", "calibration", "90 %", "95 %",
                                  "Holm", "independent"])
def test_the_rule_says_what_it_does(word):
    assert word in VERDICT_RULE


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
    row = Outcome(c, plain(90, 80, 100)).to_json()
    assert row["basis"] == "model" and row["provisional"] == "predates a fix"
    back = from_json(row).claim
    assert (back.basis, back.provisional, back.seed_label) == ("model", "predates a fix", "C004-2a")
    old = {k: v for k, v in row.items() if k not in ("basis", "provisional")}   # results.json before the fields
    assert from_json(old).claim.basis == "measured" and from_json(old).claim.provisional == ""


def test_a_results_row_with_an_unknown_basis_is_refused_in_one_line():
    from snaptax.claims import Outcome, from_json
    from snaptax.errors import ConfigError
    row = Outcome(claim(65), plain(60, 55, 65)).to_json()
    with pytest.raises(ConfigError, match=r"claims\[t.C001-1\]\.basis"):
        from_json({**row, "basis": "guessed"})


def test_the_effect_ratio_is_ours_over_the_published_effect_with_our_interval_mapped():
    from snaptax.claims import effect_ratio
    # a loss: (ours − 0) / (65 − 0); 10 % and 58 % are both 'same direction' or better, but 0.15 against 0.89
    r = effect_ratio(claim(65), plain(13, 6.5, 19.5))
    assert r is not None and r.key == "claim.t.C001-1.effect_ratio"
    assert r.value == pytest.approx(0.2) and (r.low, r.high) == (pytest.approx(0.1), pytest.approx(0.3))
    assert r.n == 3 and r.digits == 2
    # a ratio below its no-effect value: (ours − 100) / (3.7 − 100); the ends swap
    kept = claim(3.7, no_effect=100.0, tolerance=5.0)
    r = effect_ratio(kept, plain(51.85, 41, 60))
    assert r.value == pytest.approx(0.5) and r.low == pytest.approx(40 / 96.3) and r.high == pytest.approx(59 / 96.3)
    assert r.low < r.value < r.high
    # the other direction is negative; an effect larger than published above 1
    assert effect_ratio(claim(65), plain(-13, -20, -6)).value == pytest.approx(-0.2)
    assert effect_ratio(claim(2.0, no_effect=1.0, tolerance=0.4, unit="×"), plain(2.5, 2.4, 2.6)).value == \
        pytest.approx(1.5)


def test_no_effect_ratio_without_a_published_effect():
    from snaptax.claims import effect_ratio
    assert effect_ratio(claim(0.0), plain(5, 1, 9)) is None                   # 'no impact'
    assert effect_ratio(claim(10.0, tolerance=15.0), plain(5, 1, 9)) is None   # within the tolerance of no effect
    direction = Claim("t.C004-1", "key", "Fig. 1", "x", 120.0, "%", 100.0, 10.0, "b", "t.v", "s",
                      "overhead (no number)")
    assert effect_ratio(direction, plain(150, 140, 160)) is None              # a placeholder, not the seed's size
    single = effect_ratio(claim(65), Value("t.v", 13, "%", math.nan, math.nan, 1))
    assert single is not None and single.value == pytest.approx(0.2) and not single.has_interval


def test_tallies_and_seed_claims_count_rows():
    from snaptax.claims import seed_claims, tally, tally_words
    outs = [Outcome(claim(65), ours(shifted(65, 1.0))), Outcome(claim(65), ours(shifted(25, 1.0))),
            Outcome(claim(35), ours([13, 14])),
            Outcome(Claim("t.x", "k", "w", "s", 2.0, "×", 1.0, 0.4, "b", "t.v", "s", label="C000-1b"),
                    ours(shifted(2.0, 0.05)))]
    assert tally(outs) == {"agrees": 2, "differs": 1, "inconclusive": 0, "not judged": 1, "calibration": 0}
    assert tally_words(outs) == "2 agree, 1 differs, 1 not judged"
    assert tally_words([]) == ""
    assert seed_claims(outs) == ["C001-1", "C000-1b"]


def test_the_studies_mark_their_model_checks():
    from snaptax.studies.lifecycle.analyse import claims as lifecycle_claims
    from snaptax.studies.tiering.analyse import _claims as tiering_claims
    tiering = {c.seed_label: c.basis for c in tiering_claims({"sas_pool", "tier_pool"})}
    # the tiered pool's rows are measured since the emulator serves the flash tier near its speed (issue 45.3)
    assert set(tiering.values()) == {"measured"} and len(tiering) == 8
    for c in tiering_claims({"sas_pool", "tier_pool"}):
        assert "at_tier_speed" not in c.value_key
    lifecycle = {c.seed_label: c.basis for c in lifecycle_claims()}
    assert lifecycle.pop("C000-6") == "model" and set(lifecycle.values()) == {"measured"}
