"""The seed documents as data: five, each cited in refs.bib, headline claims named by study."""
import re

from snaptax import paths, seeds


def test_five_seeds_each_cited_in_the_bibliography():
    bib = (paths.PAPER_DIR / "refs.bib").read_text()
    keys = set(re.findall(r"@\w+\{([^,]+),", bib))
    assert [s.id for s in seeds.SEEDS] == ["000", "001", "002", "003", "004"]
    for s in seeds.SEEDS:
        assert s.cite in keys, s.cite
        assert s.studies, s.id
        # a seed states its headline either through a claim or as a cited reference value with its place
        assert s.headline_claims or (s.published and s.where), s.id
        for claim_id in s.headline_claims:
            assert claim_id.split(".")[0] in s.studies


def test_models_present_are_the_modules_that_exist():
    assert seeds.model_exists("chain") and not seeds.model_exists("no_such_model")
    s = seeds.Seed("009", "k", "x", ("a",), models=(seeds.Model("chain", "c"), seeds.Model("no_such_model", "n")))
    assert [m.module for m in s.models_present()] == ["chain"]
    assert seeds.get("003").cite == "lavallee2013"
