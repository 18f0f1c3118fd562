"""The paper's sentences about its values hold for the committed runs, and a sentence the data contradict stops
the render naming the value and the sentence."""
import math

import pytest

from snaptax import derived, registration, studies
from snaptax.paper import prose
from snaptax.record import published_runs
from snaptax.values import DerivedValues, Value


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
    values = prose.fact_values(derived.values_of(published_runs("local", study.id, "quick")[-1])
                               for study in studies.REGISTRY)
    assert prose.broken(prose.FACTS, values) == []


def test_the_bands_the_prose_reads_are_their_registered_tolerance():
    """A sentence read against a claim's band ('within the claim's tolerance') is checked against the tolerance the
    verdicts use and the claims table prints: the registration's, by its one rule."""
    reg = registration.newest()
    assert reg is not None
    for (claim_id, around), (low, high) in prose.BANDS.items():
        r = reg.get(claim_id)
        centre = getattr(r, around)
        assert (low, high) == pytest.approx((centre - r.tolerance, centre + r.tolerance)), claim_id
    assert prose.READS_DOUBLE_BAND == pytest.approx((1.8, 2.2))       # 2 ± 0.2 (an amplification's smallest effect)
    assert prose.SEEK_BAND == pytest.approx((95.0, 105.0))


def test_a_sentence_set_against_a_seeds_number_reads_it_from_the_claim():
    """'more than twice the seed's share': the seed's number is the claim's published value (prose.fact_values
    gives it from the runs' claim rows), not a copy typed into the fact."""
    key = "lifecycle.saturated.vm_total_with_over_before"
    d = DerivedValues("lifecycle", "r1", "local", "quick")
    d.add([Value(key, 80.0, "%", 78.0, 82.0, 3)])
    d.claims = [{"id": "lifecycle.C000-3a", "published": 27.6, "unit": "%"}]
    fact = next(f for f in prose.FACTS if f.key == key and f.relation == "above" and f.times == 2)
    assert fact.than == prose.published("lifecycle.C000-3a") == "claim.lifecycle.C000-3a.published"
    values = prose.fact_values([d])
    assert values[fact.than].value == 27.6 and fact.holds(values)
    d.claims = [{"id": "lifecycle.C000-3a", "published": 41.0, "unit": "%"}]      # the seed's number, changed
    assert prose.broken([fact], prose.fact_values([d])) == [
        f"{key} = 80 [78, 82], not wholly above 82: rewrite {fact.where}"]


def test_an_advice_paragraph_is_typeset_only_where_its_model_predicts_within_the_bound():
    from snaptax.paper import macros

    def held(model, verdict, low, high):
        return {f"{model}.heldout.verdict": Value(f"{model}.heldout.verdict", text=verdict),
                f"{model}.heldout.error": Value(f"{model}.heldout.error", (low + high) / 2, "%", low, high, 2),
                f"{model}.heldout.bound": Value(f"{model}.heldout.bound", 10.0, "%")}

    model = prose.ADVICE_MODELS[0]
    assert prose.advice_holds(held(model, "predicts", -8.1, -6.7), model)
    assert not prose.advice_holds(held(model, "predicts", -12.0, -6.7), model)      # the 95 % interval leaves the bound
    assert not prose.advice_holds(held(model, "does not predict", -33.1, -21.8), model)
    assert not prose.advice_holds({}, model)
    flag = f"\\csname snaptax@advice@{model}\\endcsname"
    assert flag in macros.render_tex(held(model, "predicts", -8.1, -6.7).values(), [model])
    assert flag not in macros.render_tex(held(model, "predicts", -8.1, -6.7).values())
    assert "\\newcommand{\\advice}" in macros.TEX_PREAMBLE


def _sides(fact: prose.Fact) -> tuple[dict, dict]:
    """Synthetic values on both sides of a fact: one set where it holds, one where it does not."""
    if fact.relation == "says":
        return ({fact.key: Value(fact.key, text=str(fact.than))},
                {fact.key: Value(fact.key, text=f"not {fact.than}")})
    ref = {fact.than: Value(fact.than, 50.0)} if isinstance(fact.than, str) else {}
    x = fact.reference(ref)
    holds, fails = {
        "includes": ((x, x - 1, x + 1), (x + 2, x + 1, x + 3)),
        "above": ((x + 2, x + 1, x + 3), (x, x - 1, x + 1)),
        "below": ((x - 2, x - 3, x - 1), (x, x - 1, x + 1)),
        "estimate_below": ((x - 1, math.nan, math.nan), (x + 1, math.nan, math.nan)),
        "estimate_above": ((x + 1, math.nan, math.nan), (x - 1, math.nan, math.nan)),
        "equals": ((x, math.nan, math.nan), (x + 1, math.nan, math.nan)),
    }[fact.relation]
    def value(v: float, lo: float, hi: float) -> Value:
        return Value(fact.key, v, "", lo, hi, 3)
    return {fact.key: value(*holds), **ref}, {fact.key: value(*fails), **ref}


def test_every_guarded_fact_on_both_sides_of_its_value_and_the_first_page_names_the_failing_ones(tmp_path):
    """Each sentence the prose guard reads is checked on synthetic values where it holds and where it does not; the
    failing ones (all of them at once) typeset on the paper's first page, so a rerun whose data contradict the
    prose still ends in a PDF that says so."""
    import shutil
    import subprocess

    failing = []
    for fact in prose.FACTS:
        good, bad = _sides(fact)
        assert prose.broken([fact], good) == [], fact
        problems = prose.broken([fact], bad)
        assert len(problems) == 1 and problems[0].endswith(f"rewrite {fact.where}"), fact
        failing += problems
    note = prose.outdated_tex(failing)
    assert f"no longer support {len(prose.FACTS)} sentences" in note and prose.outdated_tex([]) == ""
    if shutil.which("pdflatex") is None:
        pytest.skip("no pdflatex (make setup installs it)")
    (tmp_path / "t.tex").write_text("\\documentclass{article}\\usepackage[T1]{fontenc}\\begin{document}\n"
                                    + note + "\\end{document}\n")
    r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:]
