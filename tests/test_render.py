"""render's own TeX helpers."""
from snaptax.render import breakable


def test_breakable_key():
    assert breakable("a_b.c.d") == "a\\_b.\\allowbreak{}c.\\allowbreak{}d"
