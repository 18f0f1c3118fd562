"""TeX helpers of snaptax.macros."""
from snaptax import macros
from snaptax.macros import breakable


def test_breakable_key():
    assert breakable("a_b.c.d") == "a\\_\\allowbreak{}b.\\allowbreak{}c.\\allowbreak{}d"


def test_render_long_table_defines_the_rows_a_longtable_expands():
    tex = macros.render_long_table("t", ["a", "b"], [["1", "2"], ["3", "4"]])
    assert tex.count("\\endfirsthead") == 1 and tex.count("\\endhead") == 1 and tex.count("\\endfoot") == 1
    assert "\\csname snaptax@table@t\\endcsname" in tex
    # the header comes twice (first page, continued pages), each row once, after the foot
    assert tex.count("a & b \\\\") == 2 and tex.index("\\endfoot") < tex.index("1 & 2 \\\\") < tex.index("3 & 4")
    assert tex.count("{") == tex.count("}")
