"""The reproducibility section's comparisons: a rerun of each profile, and the everyday quick run against the
paper-grade one."""
from types import SimpleNamespace

from snaptax import compare
from snaptax.paper import repro


def rendered(study, profile):
    manifest = SimpleNamespace(profile=SimpleNamespace(name=profile))
    return SimpleNamespace(study=study, analysis=SimpleNamespace(record=SimpleNamespace(manifest=manifest)))


def verdict(claim, quick, full):
    return compare.VerdictComparison(claim, "statement", quick, full)


def test_the_first_page_says_which_studies_rest_on_paper_grade_runs():
    mixed = [rendered("chain_length", "quick"), rendered("lifecycle", "full"), rendered("tiering", "quick"),
             rendered("db_snapshots", "full")]
    assert repro.selection_clause(mixed) == (
        "each study's newest paper-grade run where it has one, else its quick run (full for lifecycle and "
        "db_snapshots; quick for chain_length and tiering)")
    assert repro.selection_clause([rendered("a", "quick"), rendered("b", "quick")]) == \
        "every study's newest quick run"


def test_changed_and_opposite_verdicts_between_the_profiles_are_counted_and_named():
    lifecycle = compare.RunComparison("lifecycle", "q", "f", (), (
        verdict("C000-1a", "inconclusive", "agrees"), verdict("C000-3a", "differs", "differs"),
        verdict("C000-1c", "agrees", "differs")))
    db = compare.RunComparison("db_snapshots", "q2", "f2", (), (verdict("C004-1", "agrees", "agrees"),))
    values = {v.key: v for v in repro.profile_values([lifecycle, db])}
    assert values["paper.profiles.studies"].value == 2
    assert values["paper.profiles.list"].text == "lifecycle, db_snapshots"
    assert values["paper.profiles.verdicts_same"].value == 2 and values["paper.profiles.verdicts_total"].value == 4
    assert values["paper.profiles.opposite"].value == 1
    assert values["paper.profiles.changed"].text == ("C000-1a inconclusive at quick, agrees paper-grade; "
                                                      "C000-1c agrees at quick, differs paper-grade")
    none = {v.key: v for v in repro.profile_values([])}
    assert none["paper.profiles.changed"].text == "none" and none["paper.profiles.list"].text == "none"
    assert "No study has a paper-grade run yet." in repro.profile_tex([], {})
