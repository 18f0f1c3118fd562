"""TeX helpers of snaptax.macros."""
from snaptax.macros import breakable


def test_breakable_key():
    assert breakable("a_b.c.d") == "a\\_b.\\allowbreak{}c.\\allowbreak{}d"
