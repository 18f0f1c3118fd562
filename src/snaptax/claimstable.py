"""The claims table from data/ alone (`snaptax claims`, `make claims`): every claim row of each study's newest run,
with the verdicts the paper prints (Holm-adjusted within each seed's family: claims.adjusted), and a tally of them
per seed.

Four forms: text that fits a terminal (long cells wrapped, one line per study naming its run; the source of each
claim is in the other forms), Markdown, CSV (the rows only, one line each, for a spreadsheet) and JSON (the rows and
the tally: the form checks read, issue 47). Every form marks the rows whose run has measurements flagged for
emulator lateness (late), whose "ours" is a model's prediction rather than a measurement (model), and the provisional
ones.
"""
from __future__ import annotations

import csv
import io
import json
import math
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import claims as claimsmod, judged, profiles, registration
from .claims import Outcome
from .errors import ConfigError
from .record.parts import short_run_id
from .values import DerivedValues, Value, format_number

if TYPE_CHECKING:
    from .record import RunRef

FORMATS = ("text", "markdown", "csv", "json")
WIDTH = 120               # the terminal the text form fits by default
MIN_WIDTH = 60            # narrower, the cells wrap a word or two a line
GAP = 2                   # spaces between the text form's columns
NARROWEST = 6             # a column is never wrapped narrower, even if a word must be broken

# what each mark says (the text and Markdown forms' legend)
MARKS = {"late": "its run has emulated measurements flagged for lateness (the emulator fell behind its drive model, "
                 "so the run's timings are suspect)",
         "model": "ours is a model's prediction, not a measurement; the verdict checks the model",
         "provisional": "a known bias of the run that measured it (the paper says which)"}


@dataclass(frozen=True)
class Row:
    """One claim row: the claim's outcome (with its family verdict) and the run it comes from."""

    study: str
    run: str                  # the run's directory name
    outcome: Outcome
    flagged: int = 0          # the run's emulated measurements flagged for lateness ...
    emulated: int = 0         # ... of this many

    @property
    def marks(self) -> list[str]:
        c = self.outcome.claim
        return [m for m, on in (("late", self.flagged > 0), ("model", c.is_model),
                                ("provisional", bool(c.provisional))) if on]

    def to_json(self) -> dict[str, Any]:
        o, c = self.outcome, self.outcome.claim
        ratio = o.effect_ratio
        side = (c.direction or (1 if c.published > c.no_effect else -1)) if c.direction_only else None
        return {"claim": c.id, "label": c.seed_label, "seed": c.seed, "study": self.study, "run": self.run,
                "statement": c.statement, "cite": c.cite, "where": c.where,
                # a direction without a number has no published value (its `published` is a placeholder)
                "published": None if c.direction_only else _number(c.published),
                "published_text": c.published_text, "direction": side, "unit": c.unit,
                "no_effect": _number(c.no_effect), "tolerance": _number(c.tolerance),
                "tolerance_unit": claimsmod.tolerance_unit(c),
                "ours": {"value": _number(o.ours.value), "low": _number(o.ours.low), "high": _number(o.ours.high),
                         "n": o.ours.n, "independent": o.ours.independent, "basis": c.basis},
                "verdict": o.verdict, "not_judged_because": o.judgeable or None, "role": c.role,
                "registration": c.registration or None, "pre_registered": c.pre_registered,
                "effect_ratio": None if ratio is None else {"value": _number(ratio.value), "low": _number(ratio.low),
                                                            "high": _number(ratio.high)},
                "same_direction": o.same_direction,
                "late": self.flagged > 0, "flagged": self.flagged, "emulated": self.emulated,
                "model": c.is_model, "provisional": c.provisional or None, "marks": self.marks}


def _number(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def rows_of(runs: list[tuple[str, DerivedValues]], registrations: list[dict[str, str] | None] | None = None) \
        -> list[Row]:
    """The claim rows of runs (each its directory name and derived values), in the order given, with the verdicts
    adjusted within each seed's family across all of them (claims.adjusted). With `registrations` (what each run's
    manifest recorded) each run's claims are judged by the registration in force when it was measured
    and the operating points it measured at (snaptax.judged)."""
    found: list[tuple[str, str, Outcome, int, int]] = []
    for i, (run, d) in enumerate(runs):
        flagged, emulated = (_count(d.values.get(f"{d.study}.run.{k}")) for k in ("flagged", "emulated_measurements"))
        outcomes = [claimsmod.from_json(row) for row in d.claims]
        if registrations is not None:
            outcomes = judged.for_run(outcomes, registrations[i], judged.inferred_in(d))
        found += [(d.study, run, o, flagged, emulated) for o in outcomes]
    adjusted = claimsmod.adjusted([f[2] for f in found])
    return [Row(s, r, o, f, e) for (s, r, _, f, e), o in zip(found, adjusted, strict=True)]


def _count(v: Value | None) -> int:
    return int(v.value) if v is not None and math.isfinite(v.value) else 0


def newest(rig: str, profile: str) -> list[tuple[RunRef, DerivedValues]]:
    """Each registered study's newest run at `profile` with its derived values (studies.NoPublishedRun if one has
    none): what `rows` judges, and what the companion site reads the models' held-out tests from."""
    from . import derived, studies

    found = [s.newest_run(rig, profile) for s in studies.REGISTRY]    # a study without a run stops before analysing
    return [(run, derived.values_of(run)) for run in found]


def rows(rig: str, profile: str, runs: list[tuple[RunRef, DerivedValues]] | None = None) -> list[Row]:
    """The claim rows of each registered study's newest run at `profile` (studies.NoPublishedRun if one has none);
    `runs`: those runs as `newest` gives them, when the caller has read them already."""
    from .record import PartSet

    runs = newest(rig, profile) if runs is None else runs
    # a set's parts all recorded the same registration (record.parts checks it when it combines them)
    return rows_of([(run.name, d) for run, d in runs],
                   [registration.recorded_in(run.runs[0] if isinstance(run, PartSet) else run) for run, _ in runs])


def tally(rows: list[Row]) -> dict[str, dict[str, int]]:
    """Per seed (in order), then 'all': how many rows have each verdict (claims.VERDICTS, zeros included)."""
    seeds = sorted({r.outcome.claim.seed for r in rows})
    out = {s: dict(claimsmod.tally(r.outcome for r in rows if r.outcome.claim.seed == s)) for s in seeds}
    out["all"] = dict(claimsmod.tally(r.outcome for r in rows))
    return {k: {str(v): n for v, n in t.items()} for k, t in out.items()}


def check(fmt: str, width: int) -> None:
    """A format and width the table can be written in, else ConfigError naming FORMAT or WIDTH."""
    if fmt not in FORMATS:
        raise ConfigError("claims", "FORMAT", f"{fmt!r} is not one of {', '.join(FORMATS)}")
    if width < MIN_WIDTH:
        raise ConfigError("claims", "WIDTH", f"{width} columns is narrower than the table's least, {MIN_WIDTH}")


def render(rows: list[Row], fmt: str, rig: str, profile: str, width: int = WIDTH) -> str:
    """The table in one of FORMATS (ConfigError naming FORMAT or WIDTH otherwise: check)."""
    check(fmt, width)
    if fmt == "json":
        return json.dumps({"rig": rig, "profile": profile, "verdict_rule": claimsmod.VERDICT_RULE,
                           "rows": [r.to_json() for r in rows], "tally": tally(rows)},
                          indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    if fmt == "csv":
        return _csv(rows)
    if fmt == "markdown":
        return _markdown(rows, rig, profile)
    return _text(rows, rig, profile, width)


# ---- cells -----------------------------------------------------------------------------------------------------

def _interval(v: Value) -> str:
    return f"[{format_number(v.low, v.digits)}, {format_number(v.high, v.digits)}]" if v.has_interval else ""


def ours_cell(o: Outcome) -> str:
    """Our value and unit, its 95 % interval on the next line, and the model mark on the next (claims.MODEL_MARK)."""
    lines = [f"{o.ours.formatted()} {o.claim.unit}".strip(), _interval(o.ours),
             claimsmod.MODEL_MARK if o.claim.is_model else ""]
    return "\n".join(line for line in lines if line)


def ratio_cell(o: Outcome) -> str:
    """Ours ÷ the published effect (claims.effect_ratio), its interval on the next line; '' without one."""
    ratio = o.effect_ratio
    return "" if ratio is None else "\n".join(x for x in (ratio.formatted(), _interval(ratio)) if x)


def verdict_cell(o: Outcome, sep: str = "\n") -> str:
    """The verdict (and why a row is not judged), then whether ours has the published effect's sign (the secondary
    column, never counted), as the paper's table gives them."""
    why = f" ({o.judgeable})" if o.verdict == "not judged" and o.judgeable else ""
    sign = {True: "same sign", False: "other sign", None: ""}[o.same_direction]
    return o.verdict + why + (sep + sign if sign else "")


def run_line(study: str, run: str, flagged: int, emulated: int, registration: str = "",
             pre_registered: bool = True) -> str:
    late = (f": LATE, {flagged} of {emulated} emulated measurements flagged for lateness" if flagged
            else "")
    judged_by = (f" (judged by registration {registration}" + ("" if pre_registered else
                                                               ", which it predates: not pre-registered") + ")"
                 if registration else "")
    return f"{study}: run {short_run_id(run)}{judged_by}{late}"


def _legend(rows: list[Row]) -> list[str]:
    present = {m for r in rows for m in r.marks}
    return [f"{m}: {text}" for m, text in MARKS.items() if m in present]


def _headline(rows: list[Row], rig: str, profile: str) -> str:
    return (f"claims of {profiles.runs_words(profile)} on rig {rig}: {len(rows)} rows testing "
            f"{len(claimsmod.seed_claims(r.outcome for r in rows))} seed claims; verdicts Holm-adjusted within each "
            "seed's family, as the paper prints them")


TALLY_HEADER = ["seed", *claimsmod.VERDICTS, "rows"]


def _tally_rows(rows: list[Row]) -> list[list[str]]:
    from . import seeds

    out = []
    for seed, counts in tally(rows).items():
        name = "all seeds" if seed == "all" else f"{seed} ({seeds.get(seed).cite})"
        out.append([name, *(str(counts[v]) for v in claimsmod.VERDICTS), str(sum(counts.values()))])
    return out


# ---- text ------------------------------------------------------------------------------------------------------

# the claim's label with its marks below it (a column of their own would be mostly empty)
TEXT_HEADER = ["claim\n(marks)", "statement", "published", "ours [95 % CI]", "ours ÷ published effect", "tolerance",
               "verdict"]
TEXT_WEIGHTS = [1.0, 2.5, 1.0, 1.0, 1.0, 1.0, 1.5]     # the statement keeps the most room, then the verdict


def _text_cells(r: Row) -> list[str]:
    o, c = r.outcome, r.outcome.claim
    return ["\n".join([c.seed_label, *r.marks]), c.statement, claimsmod.published_str(c), ours_cell(o),
            ratio_cell(o), claimsmod.tolerance_str(c), verdict_cell(o)]


def _text(rows: list[Row], rig: str, profile: str, width: int) -> str:
    cells = [_text_cells(r) for r in rows]
    widths = column_widths([TEXT_HEADER, *cells], width, weights=TEXT_WEIGHTS)
    out = textwrap.wrap(_headline(rows, rig, profile), width) + [""]
    out += table_lines(TEXT_HEADER, widths)
    out.append("-" * min(width, sum(widths) + GAP * (len(widths) - 1)))
    last: tuple[str, str] | None = None
    for r, row in zip(rows, cells, strict=True):
        if (r.study, r.run) != last:
            c = r.outcome.claim
            out += textwrap.wrap(run_line(r.study, r.run, r.flagged, r.emulated, c.registration, c.pre_registered),
                                 width)
            last = (r.study, r.run)
        out += table_lines(row, widths)
    out += ["", "tally per seed (rows by verdict):"]
    tally_cells = _tally_rows(rows)
    out += [line for row in [TALLY_HEADER, *tally_cells]
            for line in table_lines(row, column_widths([TALLY_HEADER, *tally_cells], width))]
    legend = _legend(rows)
    if legend:
        out += ["", "marks:"] + [line for m in legend
                                 for line in textwrap.wrap(m, width, initial_indent="  ", subsequent_indent="    ")]
    return "\n".join(out) + "\n"


def _longest_word(cell: str) -> int:
    return max((len(w) for w in cell.split()), default=0)


def _longest_line(cell: str) -> int:
    return max((len(line) for line in cell.split("\n")), default=0)


def column_widths(table: list[list[str]], width: int, gap: int = GAP,
                  weights: list[float] | None = None) -> list[int]:
    """Column widths that fit `width` with `gap` between columns: each column as wide as its longest line, then the
    widest (its width ÷ its weight: a column of weight 2 keeps twice the others' width) narrowed a column at a time,
    first no narrower than its longest word, then (if still too wide) down to NARROWEST, breaking words."""
    n = len(table[0])
    weight = weights or [1.0] * n
    widths = [max(_longest_line(row[i]) for row in table) for i in range(n)]
    room = width - gap * (n - 1)
    for floor in ([max(_longest_word(row[i]) for row in table) for i in range(n)], [NARROWEST] * n):
        while sum(widths) > room:
            shrinkable = [i for i in range(n) if widths[i] > floor[i]]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: widths[i] / weight[i])
            widths[widest] -= 1
    return widths


def wrap_cell(cell: str, width: int) -> list[str]:
    """A cell's lines at `width`: its own lines, each wrapped at spaces (a word longer than the width broken)."""
    return [part for line in cell.split("\n")
            for part in (textwrap.wrap(line, width, break_on_hyphens=False) or [""])]


def table_lines(row: list[str], widths: list[int], gap: int = GAP) -> list[str]:
    """One table row as terminal lines: every cell wrapped to its column, side by side."""
    wrapped = [wrap_cell(c, w) for c, w in zip(row, widths, strict=True)]
    height = max(len(w) for w in wrapped)
    return [(" " * gap).join((w[k] if k < len(w) else "").ljust(widths[i]) for i, w in enumerate(wrapped)).rstrip()
            for k in range(height)]


# ---- markdown and csv ------------------------------------------------------------------------------------------

MARKDOWN_HEADER = ["claim", "statement", "source", "published", "ours [95 % CI]", "ours ÷ published effect",
                   "tolerance", "verdict", "marks", "study", "run"]


def _md(cell: str) -> str:
    return cell.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(_md(c) for c in header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]


def _markdown(rows: list[Row], rig: str, profile: str) -> str:
    body = [[r.outcome.claim.seed_label, r.outcome.claim.statement, f"{r.outcome.claim.cite}, {r.outcome.claim.where}",
             claimsmod.published_str(r.outcome.claim), ours_cell(r.outcome), ratio_cell(r.outcome),
             claimsmod.tolerance_str(r.outcome.claim), verdict_cell(r.outcome, "; "), ", ".join(r.marks), r.study,
             short_run_id(r.run) + (f" ({r.flagged} of {r.emulated} flagged)" if r.flagged else "")] for r in rows]
    out = [_headline(rows, rig, profile) + ".", "", *_md_table(MARKDOWN_HEADER, body), "", "Tally per seed (rows by "
           "verdict):", "", *_md_table(TALLY_HEADER, _tally_rows(rows))]
    legend = _legend(rows)
    if legend:
        out += ["", "Marks:", ""] + [f"- {m}" for m in legend]
    return "\n".join(out) + "\n"


def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A JSON row flattened for CSV: nested objects' keys joined with '_' (ours_low), lists joined with '; '."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out |= flat(v, f"{prefix}{k}_")
        else:
            out[f"{prefix}{k}"] = "; ".join(v) if isinstance(v, list) else v
    return out


# the CSV form's columns: a JSON row flattened (flat), the effect ratio's three always present
CSV_COLUMNS = ("claim", "label", "seed", "study", "run", "statement", "cite", "where", "published", "published_text",
               "direction", "unit", "no_effect", "tolerance", "tolerance_unit", "ours_value", "ours_low", "ours_high",
               "ours_n", "ours_independent", "ours_basis", "verdict", "not_judged_because", "role", "registration",
               "pre_registered",
               "effect_ratio_value", "effect_ratio_low", "effect_ratio_high", "same_direction", "late", "flagged",
               "emulated", "model", "provisional", "marks")


def csv_row(r: Row) -> dict[str, Any]:
    """A row as the CSV form writes it (CSV_COLUMNS; '' for none)."""
    j = r.to_json()
    j["effect_ratio"] = j["effect_ratio"] or {"value": None, "low": None, "high": None}
    return {k: ("" if v is None else v) for k, v in flat(j).items()}


def _csv(rows: list[Row]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(csv_row(r) for r in rows)
    return buf.getvalue()
