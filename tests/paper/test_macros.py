"""TeX helpers of snaptax.paper.macros, and the \\val lookup: a value the paper asks for and the data lack fails in
one line."""
import pytest

from snaptax.paper import macros
from snaptax.paper.macros import MissingValue, breakable, check_available, keys_used, render_tex
from snaptax.values import Value


def test_breakable_key():
    assert breakable("a_b.c.d") == "a\\_\\allowbreak{}b.\\allowbreak{}c.\\allowbreak{}d"


def test_render_long_table_defines_the_rows_a_longtable_expands():
    tex = macros.render_long_table("t", ["a", "b"], [["1", "2"], ["3", "4"]])
    assert tex.count("\\endfirsthead") == 1 and tex.count("\\endhead") == 1 and tex.count("\\endfoot") == 1
    assert "\\csname snaptax@table@t\\endcsname" in tex
    # the header comes twice (first page, continued pages), each row once, after the foot
    assert tex.count("a & b \\\\") == 2 and tex.index("\\endfoot") < tex.index("1 & 2 \\\\") < tex.index("3 & 4")
    assert tex.count("{") == tex.count("}")


def test_fmt_is_format_number_for_tex():
    from snaptax.values import format_number

    assert macros.fmt(1234567.4) == "1\\,234\\,567" and macros.fmt(-1234.5) == "-1\\,234"
    assert macros.fmt(3.14159, 2) == "3.14" and macros.fmt(12345.678, 1) == "12345.7"
    assert macros.fmt(5, 2) == "5" and macros.fmt(12345, 1) == "12\\,345"      # an int stays whole
    assert macros.fmt(float("nan"), 1) == macros.fmt(None) == "n/a"
    assert macros.fmt("a_b & c") == "a\\_b \\& c"
    for x, d in [(987654.3, 0), (0.125, 2), (-0.5, 0), (1e6, 3)]:
        assert macros.fmt(x, d) == format_number(x, d).replace("\u2009", "\\,")


def test_tex_defines_every_value_and_escapes_text():
    tex = render_tex([Value("s.t", text="50%_x")])
    assert "\\csname snaptax@v@s.t\\endcsname{50\\%\\_x}" in tex


def test_missing_value_names_the_key_and_the_file(tmp_path):
    paper = tmp_path / "p.tex"
    paper.write_text("Loss \\valci{s.loss}\\,\\% and \\val{s.there}. % \\val{s.commented}\n")
    used = keys_used([paper])
    assert set(used) == {"s.loss", "s.there"}
    check_available(used, ["s.loss", "s.there"])
    with pytest.raises(MissingValue, match="p.tex: asks for value 's.loss'"):
        check_available(used, ["s.there"])
