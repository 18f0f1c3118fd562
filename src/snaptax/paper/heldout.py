"""The paper's table of models (issue 48): every model with a held-out test, what it predicts, its held-out error
and its verdict, read from the studies' Values `<study>.<model>.heldout[.<subset>].<name>` (models.heldout.quoted:
error, worst, bound, n, fit_points, verdict, reason, predicts). The discussion of the models opens with it; advice
to practitioners is drawn only from the rows whose verdict is 'predicts'."""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..values import Value, format_number
from . import macros

MARK = ".heldout."
# The verdict models.heldout gives a model within its held-out bound (the paper layer reads values, not models, so it
# compares the verdict's word)
PREDICTS = "predicts"

@dataclass(frozen=True)
class ModelName:
    """How the paper names a model: its short label (the models table and the held-out figure) and its name in the
    discussion's sentences."""
    label: str
    prose: str


# The models the paper names, one entry each: (study, model) → ModelName
MODEL_NAMES = {
    ("metadata_cache", "cost"): ModelName("metadata cache: misses and cost", "the metadata-cache cost model"),
    ("chain_length", "chain"): ModelName("chain service time", "the chain model"),
    ("db_snapshots", "cost"): ModelName("database snapshots: T0, tau1, tau2",
                                        "the per-page cost model of database snapshots"),
    ("db_snapshots", "copy_work"): ModelName("database snapshots: T0 + beta C",
                                             "the copy-work model of a database snapshot's duration"),
    ("memory_dump", "after"): ModelName("dump time: wait after the write",
                                        "the dump-time model that waits after the write"),
    ("memory_dump", "overlap"): ModelName("dump time: wait overlaps the write",
                                          "the dump-time model whose wait overlaps the write"),
    ("memory_dump", "oversleep"): ModelName("dump time: wait plus delta",
                                            "the dump-time model with a free term per wait"),
    ("memory_dump", "zero_skip"): ModelName("dump time: zero blocks skipped",
                                            "the dump-time model that skips zero blocks"),
    ("lifecycle", "consolidation"): ModelName("consolidation by helper snapshots", "the consolidation model"),
    ("lifecycle", "consolidation_apart"): ModelName("consolidation, parameters measured apart",
                                                    "the consolidation model with its parameters measured apart"),
    ("lifecycle", "seek"): ModelName("seek span (datasheet)", "the seek-span model"),
    ("tiering", "misplacement"): ModelName("tiering misplacement", "the misplacement model")}


def model_label(study: str, model: str) -> str:
    """A model's short label (MODEL_NAMES), or its study and key for one the table does not name."""
    name = MODEL_NAMES.get((study, model))
    return name.label if name else f"{study} {model}".strip()


def model_prose(study: str, model: str) -> str:
    """A model's name in a sentence (MODEL_NAMES), or 'the <study> <model> model'."""
    name = MODEL_NAMES.get((study, model))
    return name.prose if name else f"the {study} {model} model"


@dataclass(frozen=True)
class ModelRow:
    study: str
    model: str
    subset: str          # a configuration, job or device role the test is of ('' when the model has one)
    values: Mapping[str, Value]

    def get(self, name: str) -> Value | None:
        return self.values.get(name)

    @property
    def words(self) -> str:
        return model_label(self.study, self.model)

    def text(self, name: str) -> str:
        v = self.get(name)
        return v.text if v is not None and v.text is not None else ""


def rows(values: Mapping[str, Value]) -> list[ModelRow]:
    """One row per held-out test among `values` (keys with '.heldout.'), in the order of their keys."""
    found: dict[tuple[str, str, str], dict[str, Value]] = {}
    for key, v in values.items():
        if MARK not in key:
            continue
        head, rest = key.split(MARK, 1)
        if "." not in head:
            continue
        study, model = head.split(".", 1)
        subset, _, name = rest.rpartition(".")
        found.setdefault((study, model, subset), {})[name] = v
    return [ModelRow(s, m, sub, vals) for (s, m, sub), vals in sorted(found.items()) if "verdict" in vals]


def error_text(r: ModelRow) -> str:
    """The worst held-out point's error (%) with its 95 % interval and where it is, as plain text (the companion
    site prints it too); '' without points."""
    e = r.get("error")
    if e is None or not math.isfinite(e.value):
        return ""
    ci = (f" [{format_number(e.low, e.digits)}, {format_number(e.high, e.digits)}]" if e.has_interval else "")
    return f"{format_number(e.value, e.digits)}{ci} % ({r.text('worst')})"


def error_cell(r: ModelRow) -> str:
    """error_text as a TeX cell; '--' without points."""
    text = error_text(r)
    return macros.tex_escape(text).replace(" \\%", "\\,\\%") if text else "--"


def heldout_tex(values: Mapping[str, Value]) -> str:
    """The table: model (and the configuration it is of), what it predicts, held-out points, the worst held-out
    error with its 95 % interval, the bound and the verdict."""
    out = []
    previous = ("", "")
    for r in rows(values):
        n = r.get("n")
        bound = r.get("bound")
        first = (r.study, r.model) != previous     # a model tested per configuration names itself once
        previous = (r.study, r.model)
        out.append([macros.tex_escape(r.words) if first else "",
                    macros.tex_escape(r.subset) if r.subset else "",
                    macros.tex_escape(r.text("predicts")) if first else "", macros.fmt(n.value if n else math.nan),
                    error_cell(r), f"$\\pm${macros.fmt(bound.value)}\\,\\%" if bound else "--",
                    macros.tex_escape(r.text("verdict"))])
    return macros.render_table(["model", "of", "predicts", "held out", "held-out error (worst)", "bound", "verdict"],
                               out, align="p{0.17\\linewidth}lp{0.25\\linewidth}rlrl")


def heldout_values(values: Mapping[str, Value]) -> list[Value]:
    """paper.heldout.{tests,predicts}: how many held-out tests the build has, and how many predict."""
    rs = rows(values)
    return [Value("paper.heldout.tests", float(len(rs)), "models"),
            Value("paper.heldout.predicts", float(sum(r.text("verdict") == PREDICTS for r in rs)), "models")]


__all__ = ["PREDICTS", "MODEL_NAMES", "ModelName", "model_label", "model_prose", "ModelRow", "rows", "error_text",
           "error_cell", "heldout_tex", "heldout_values"]
