"""Texts compared at printed precision: a float's last bits never decide, a change of a printed digit beyond one unit
(or a word) does."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import curve_fit

from snaptax.printed import first_difference, numbers_same, same_text
from snaptax.values import Value

REPO = Path(__file__).resolve().parents[1]


def test_numbers_within_one_unit_of_the_last_printed_place_are_the_same():
    assert numbers_same("0.0016", "0.0017") and not numbers_same("0.0016", "0.0018")
    assert numbers_same("3639", "3640") and not numbers_same("3639", "3641")
    assert numbers_same("-0.00", "0.00") and numbers_same("1\u2009234", "1235")
    assert numbers_same("1625160.56", "1625161.10")        # more digits than the analysis holds: REL_TOL
    assert not numbers_same("1625160.56", "1625560.56")
    assert numbers_same("1e-05", "1.1e-05") and not numbers_same("1e-05", "3e-05")


def test_texts_differ_in_words_names_and_numbers_beyond_a_unit():
    assert same_text("loss 3.9 [-2.3, 9.8] %", "loss  4.0 [-2.3, 9.8] %")     # a column may widen
    assert not same_text("loss 3.9 [-2.3, 9.8] %", "loss 3.9 [-2.5, 9.8] %")
    assert not same_text("agrees", "differs") and not same_text("1 of 3", "1 of 3 runs")
    # digits that are part of a name compare as text: a run id a day apart, a repeat, a grid point
    assert not same_text("20261128T034135Z-quick", "20261127T034135Z-quick")
    assert not same_text("r0", "r1") and not same_text("p64-w25", "p64-w24") and not same_text("7.2.22", "7.2.21")
    assert same_text("was 3.", "was 4.")                   # a number closing a sentence is still a number
    assert first_difference("a 1.5 b", "a 1.8 b") == "1.5 against 1.8"
    assert first_difference("a 1.5 b", "a 1.5 c").startswith("text")
    assert first_difference("x 2", "x 2") == ""


def _fit(y: np.ndarray) -> list[Value]:
    """An iterative fit's parameters and 95 % intervals as the paper prints them (4 decimals)."""
    x = np.linspace(0, 1, y.size)
    p, cov = curve_fit(lambda x, a, b: a * np.exp(-b * x), x, y, p0=(1, 1))
    half = 1.96 * np.sqrt(np.diag(cov))
    return [Value(f"s.fit.{k}", p[i], "", p[i] - half[i], p[i] + half[i], y.size, 4, None, "t")
            for i, k in enumerate("ab")]


def test_a_1e_5_change_of_an_input_passes_and_an_analysis_change_fails():
    rng = np.random.default_rng(1)
    x = np.linspace(0, 1, 40)
    y = 2.0 * np.exp(-1.3 * x) + rng.normal(0, 0.02, x.size)
    base = [v.formatted_ci() for v in _fit(y)]
    nudged = [v.formatted_ci() for v in _fit(y * (1 + 1e-5 * rng.standard_normal(y.size)))]
    assert all(same_text(a, b) for a, b in zip(base, nudged, strict=True))
    changed = [v.formatted_ci() for v in _fit(y[:-4])]           # the analysis drops the last points
    assert not all(same_text(a, b) for a, b in zip(base, changed, strict=True))


def _notebook(stored: str) -> dict:
    cell = {"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {},
            "source": "# NBVAL_CHECK_OUTPUT\nprint(f'{1/3:.6f} of it')",
            "outputs": [{"name": "stdout", "output_type": "stream", "text": stored}]}
    return {"cells": [cell], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                         "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


@pytest.mark.parametrize(("stored", "passes"), [("0.333334 of it\n", True), ("0.333400 of it\n", False),
                                                 ("0.333333 of that\n", False)])
def test_nbval_checks_cells_at_printed_precision(tmp_path, stored, passes):
    """notebooks/conftest.py: a checked cell whose stored output is one unit off in its last place passes (another
    host's last bits), one a hundred units off (beyond REL_TOL too) fails, and so do other words."""
    (tmp_path / "conftest.py").write_text((REPO / "notebooks" / "conftest.py").read_text())
    (tmp_path / "n.ipynb").write_text(json.dumps(_notebook(stored)))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
                        "--nbval-current-env", str(tmp_path / "n.ipynb")], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert (r.returncode == 0) == passes, r.stdout[-2000:]
