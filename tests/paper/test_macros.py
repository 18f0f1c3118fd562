"""TeX helpers of snaptax.paper.macros."""
from snaptax.paper import macros
from snaptax.paper.macros import breakable


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
