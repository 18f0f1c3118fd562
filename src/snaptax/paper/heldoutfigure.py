"""The models' held-out points in one figure (issue 48.1): for every point a model had to predict, predicted ÷
measured with its 95 % interval (the prediction's and the measurement's uncertainty together,
models.heldout.PointError.interval), on a log axis, one row per test (its points side by side), beside the band of the
held-out bound. A model predicts when every one of its points' 90 % intervals lies inside the band (the table beside
it gives the verdicts); the figure shows how far off the others are, and in which direction.

The points come from each study's analysis (its `heldout`: one models.heldout.HeldOut, or a mapping of them by
configuration, job or device role). Pure: analyses in, a frame and a chart out.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import altair as alt
import pandas as pd

from .heldout import MODEL_NAMES, model_label

FIGURE = "heldout-predicted"
# The model a study's `heldout` holds when it holds one test (its name in the values `<study>.<model>.heldout.*`).
SINGLE_MODEL = {"metadata_cache": "cost", "db_snapshots": "copy_work", "tiering": "misplacement"}
COLUMNS = ["study", "test", "point", "row", "ratio", "low", "high", "verdict", "bound"]


class Point(Protocol):
    """A held-out point as models.heldout.PointError has it (the paper reads analyses, not the models' module)."""

    label: str

    @property
    def log_error(self) -> float: ...

    def interval(self, level: float = 0.95) -> tuple[float, float]: ...


class Test(Protocol):
    """A held-out test as models.heldout.HeldOut has it."""

    points: Sequence[Point]
    bound: float
    verdict: str


def _is_test(h: Any) -> bool:
    return all(hasattr(h, name) for name in ("points", "bound", "verdict"))


def tests_of(study: str, heldout: Any) -> list[tuple[str, Test]]:
    """(test's name in words, test) for a study's `heldout` attribute: one test, or a mapping of tests keyed by
    configuration and job, or by (device role, model) (memory_dump)."""
    if _is_test(heldout):
        model = SINGLE_MODEL.get(study, "model")
        return [(model_label(study, model), heldout)]
    if not isinstance(heldout, Mapping):
        return []
    out = []
    for key in sorted(heldout, key=str):
        parts = [str(k) for k in (key if isinstance(key, tuple) else (key,))]
        models = [p for p in parts if (study, p) in MODEL_NAMES]
        model = models[0] if models else {"chain_length": "chain"}.get(study, "")
        words = model_label(study, model)
        rest = [p for p in parts if p != model]
        out.append((f"{words} ({', '.join(rest)})" if rest else words, heldout[key]))
    return [(name, h) for name, h in out if _is_test(h)]


def points_frame(heldouts: Mapping[str, Any]) -> pd.DataFrame:
    """One row per held-out point with both a prediction and a measurement above 0: its study, test, point label,
    the row's label in the figure, predicted ÷ measured and its 95 % interval (nan ends when the point has none),
    and its test's verdict."""
    rows = []
    for study, h in heldouts.items():
        for name, test in tests_of(study, h):
            for p in test.points:
                if not math.isfinite(p.log_error):
                    continue
                lo, hi = p.interval(0.95)
                rows.append({"study": study, "test": name, "point": p.label, "row": f"{name}: {p.label}",
                             "ratio": math.exp(p.log_error), "low": math.exp(lo) if math.isfinite(lo) else math.nan,
                             "high": math.exp(hi) if math.isfinite(hi) else math.nan, "verdict": test.verdict,
                             "bound": test.bound})
    return pd.DataFrame(rows, columns=COLUMNS)


def chart(frame: pd.DataFrame) -> alt.LayerChart:
    """Predicted ÷ measured per held-out point (log axis), one row per test with its points side by side (a test
    may hold tens of points: a row each would make the figure pages long), each point's 95 % interval as a rule,
    the band 1 ± the tests' bound shaded (the widest, if they differ) and 1 drawn; colour: the test's verdict."""
    bound = float(frame["bound"].max()) if len(frame) else 0.1
    order = list(dict.fromkeys(frame["test"]))
    y = alt.Y("test:N", sort=order, title=None, axis=alt.Axis(labelLimit=300))
    x_scale = alt.Scale(type="log")
    band = alt.Chart(pd.DataFrame({"lo": [1 / (1 + bound)], "hi": [1 + bound]})).mark_rect(opacity=0.15).encode(
        x=alt.X("lo:Q", scale=x_scale), x2="hi:Q")
    one = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 3]).encode(x=alt.X("x:Q", scale=x_scale))
    base = alt.Chart(frame).encode(y=y, color=alt.Color("verdict:N", title="model's verdict"))
    bars = base.transform_filter("isValid(datum.low) && isValid(datum.high)").mark_rule(opacity=0.4).encode(
        x=alt.X("low:Q", scale=x_scale), x2="high:Q")
    dots = base.mark_point(filled=True, size=30, opacity=0.7).encode(
        x=alt.X("ratio:Q", scale=x_scale, title="predicted ÷ measured (log scale; 1 = exact)"),
        tooltip=["test", "point", alt.Tooltip("ratio:Q", format=".3f"), "verdict"])
    return (band + one + bars + dots).properties(width=360, height=max(80, 16 * len(order)))


def heldouts_of(analyses: Mapping[str, Any]) -> dict[str, Any]:
    """Each study's `heldout` attribute (None for a study without one)."""
    return {study: getattr(a, "heldout", None) for study, a in analyses.items()}


__all__ = ["FIGURE", "tests_of", "points_frame", "chart", "heldouts_of"]
