"""The models' benchmark group: its synthetic data are what the figures say, and its reference is the formula."""
import math

import numpy as np

from snaptax.bench import models as bench
from snaptax.models import seek
from snaptax.spindle.rigfiles import load_profile


def test_the_synthetic_requests_are_where_the_figures_put_them_and_the_reference_is_the_formula():
    p = load_profile("sas10k")
    rm = bench.synthetic_request_model(p, requests=2000, points=40)   # 80 000 values: more than one block
    at = np.array([*bench.FIGURES_MS, math.log(30e-6 - seek.SIGMA_FLOOR_S)])
    best = seek.negative_log_likelihood(at, rm, p)
    assert best == bench.whole_array_nll(at, rm, p)
    for shifted in ((0.4, 4.8, 9.0), (0.4, 3.2, 9.0), (0.4, 4.0, 11.0)):
        assert seek.negative_log_likelihood(np.array([*shifted, at[3]]), rm, p) > best


def test_the_likelihood_figures_are_named_and_positive():
    figures = bench.seek_likelihood(evaluations=1)
    assert set(figures) == {"seek_nll_ms", "seek_nll_whole_array_ms", "seek_nll_ms_wide",
                            "seek_nll_whole_array_ms_wide"}
    assert all(v > 0 for v in figures.values())
