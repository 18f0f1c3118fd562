"""The copy-load model: the copy cost recovered from a phase made with a known cost, its interval ordered, and a
prediction for another phase that a different cost would refute."""
import math

import pytest

from snaptax.models import copy_load as cl


def test_the_cost_is_recovered_from_a_phase_made_with_it():
    r = cl.ratio(0.97, 0.2, 0.6, 3.0)
    assert r == pytest.approx(0.97 / 1.36)
    fit = cl.fit(r, r - 0.02, r + 0.02, 0.97, 0.2, 0.6)
    assert fit.k == pytest.approx(3.0)
    assert fit.k_low < fit.k < fit.k_high        # a higher measured ratio means a cheaper copy


def test_the_prediction_follows_the_other_phases_copies_and_layout():
    fit = cl.fit(cl.ratio(0.98, 0.2, 0.6, 3.0), 0.70, 0.74, 0.98, 0.2, 0.6)
    est, low, high = cl.predict(fit, 0.95, 0.2, 0.1)
    assert est == pytest.approx(0.95 / 1.06)
    assert low < est < high
    # a phase made with a cost three times as high lies outside the predicted interval
    assert cl.ratio(0.95, 0.2, 0.1, 9.0) < low


def test_no_copies_no_cost():
    assert math.isnan(cl.copy_cost(0.9, 0.97, 0.2, 0.0))
    assert cl.ratio(0.97, 0.2, 0.0, 5.0) == pytest.approx(0.97)
