import pytest

from snaptax import claims, macros


def test_macro_names_are_letters_only_and_distinct():
    names = {macros.macro_name("Chain", "Ratio", "on-disk-metadata", f"n{i}") for i in range(13)}
    assert len(names) == 13
    assert all(n.isalpha() for n in names)
    assert macros.macro_name("loss", "in-memory", "randrw") == "LossInMemoryRandrw"


def test_rendered_macros_and_tables(tmp_path):
    path = macros.write_macros("t", {"LossX": macros.fmt(65.4), "Name": macros.tex_escape("a_b & 5%")}, tmp_path)
    text = path.read_text()
    assert "\\newcommand{\\stLossX}{65}" in text
    assert "\\newcommand{\\stName}{a\\_b \\& 5\\%}" in text
    with pytest.raises(ValueError):
        macros.render_macros({"Bad1": "x"})
    table = macros.render_table(["a", "b"], [["1", "2"]])
    assert "\\toprule" in table and "1 & 2 \\\\" in table


def test_fmt():
    assert macros.fmt(12345.6) == "12\\,346"
    assert macros.fmt(0.456, 2) == "0.46"
    assert macros.fmt(float("nan"), 1) == "n/a"


CLAIM = claims.Claim("c", "setty2021", "Table 1", "loss", 65.0, "%", 15.0)


@pytest.mark.parametrize("ours,low,high,expected", [
    (60, 58, 62, "agrees"), (40, 30, 49, "same direction"), (40, 30, 52, "agrees"),
    (-20, -25, -15, "differs"), (5, 0, 10, "differs")])
def test_verdicts(ours, low, high, expected):
    assert claims.verdict(CLAIM, ours, low, high) == expected


def test_no_impact_claim():
    none = claims.Claim("n", "setty2021", "Table 1", "loss", 0.0, "%", 15.0, "No impact")
    assert claims.verdict(none, 8.0, 2.0, 12.0) == "agrees"
    assert claims.verdict(none, 40.0, 35.0, 45.0) == "differs"
