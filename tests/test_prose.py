"""The paper's sentences about its values hold for the committed runs, and a sentence the data contradict stops
the render naming the value and the sentence."""
import math

import pytest

from snaptax import prose, studies
from snaptax.record import published_runs
from snaptax.values import Results, Value


def test_a_fact_the_data_contradict_is_named_with_its_sentence():
    values = [Value("s.ratio", 0.5, "", 0.4, 0.6, 3), Value("s.rate", 90.0), Value("s.limit", 100.0)]
    facts = (prose.Fact("s.ratio", "includes", 1.0, "intro: the interval includes 1"),
             prose.Fact("s.rate", "estimate_below", "s.limit", "intro: below the limit"),
             prose.Fact("s.ratio", "below", 1.0, "intro: a slowdown"))
    assert prose.broken(facts, {v.key: v for v in values}) == [
        "s.ratio = 0.5 [0.4, 0.6], whose interval does not include 1: rewrite intro: the interval includes 1"]
    with pytest.raises(prose.ProseOutdated, match="s.ratio.*intro: the interval includes 1"):
        prose.check(values, facts)
    with pytest.raises(prose.ProseOutdated, match="s.gone: no such value"):
        prose.check(values, (prose.Fact("s.gone", "equals", 0.0, "x"),))
    with pytest.raises(prose.ProseOutdated, match=r": s\.limit2: no such value"):     # the missing one is named
        prose.check(values, (prose.Fact("s.rate", "estimate_below", "s.limit2", "x"),))
    # no interval: an 'includes' or 'above' sentence cannot hold
    assert not prose.Fact("s.rate", "above", 0.0, "x").holds({"s.rate": Value("s.rate", 90.0)})
    assert not prose.Fact("s.rate", "estimate_below", 1.0, "x").holds({"s.rate": Value("s.rate", math.nan)})
    # estimate_above reads the estimate alone, as estimate_below does
    assert prose.Fact("s.rate", "estimate_above", 89.0, "x").holds({"s.rate": Value("s.rate", 90.0)})
    assert not prose.Fact("s.rate", "estimate_above", 90.0, "x").holds({"s.rate": Value("s.rate", 90.0)})
    assert not prose.Fact("s.rate", "estimate_above", 0.0, "x").holds({"s.rate": Value("s.rate", math.nan)})
    assert prose.broken((prose.Fact("s.rate", "estimate_above", "s.limit", "intro: above the limit"),),
                        {v.key: v for v in values}) == ["s.rate = 90, not above 100: rewrite intro: above the limit"]


@pytest.mark.committed
def test_every_fact_holds_for_the_newest_quick_runs(monkeypatch):
    monkeypatch.delenv("SNAPTAX_DATA_DIR", raising=False)   # the checkout's data/, even inside make test
    values = {}
    for study in studies.REGISTRY:
        runs = published_runs("local", study.id, "quick")
        values.update(Results.load(runs[-1]).values)
    assert prose.broken(prose.FACTS, values) == []


@pytest.mark.committed
def test_the_bands_the_prose_reads_are_their_claims_tolerance(monkeypatch):
    """A sentence read against a claim's band ('within the claim's tolerance') is checked against that claim's own
    centre and tolerance, as the committed run states them."""
    monkeypatch.delenv("SNAPTAX_DATA_DIR", raising=False)
    claims = {}
    for study in studies.REGISTRY:
        claims.update({c["id"]: c for c in Results.load(published_runs("local", study.id, "quick")[-1]).claims})
    for (claim_id, around), band in prose.BANDS.items():
        c = claims[claim_id]
        assert band == (c[around] - c["tolerance"], c[around] + c["tolerance"]), claim_id
