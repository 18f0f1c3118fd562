"""The tables and helpers every study's analysis shares (snaptax.analysis)."""
from __future__ import annotations

import math

import pandas as pd

from snaptax.analysis import geometric_mean_by_replicate


def test_one_geometric_mean_per_replicate_of_the_positive_values():
    frame = pd.DataFrame({"x": [2.0, 8.0, 3.0, 0.0, float("nan"), 5.0], "replicate": [0, 0, 1, 1, 2, 2]})
    got = geometric_mean_by_replicate(frame.x, frame.replicate)
    assert list(got.index) == [0, 1, 2]
    assert math.isclose(got[0], 4.0) and math.isclose(got[1], 3.0) and math.isclose(got[2], 5.0)
    # a replicate whose values are all left out has no number (not a zero, not a NaN)
    assert list(geometric_mean_by_replicate(pd.Series([0.0, 1.0]), pd.Series([0, 1])).index) == [1]
    # aligned by position: an index level works as the replicate, as a pivot's does
    pivot = pd.Series([1.0, 4.0], index=pd.MultiIndex.from_tuples([(3, 0), (3, 1)], names=["replicate", "repeat"]))
    assert math.isclose(geometric_mean_by_replicate(pivot, pivot.index.get_level_values("replicate"))[3], 2.0)
