"""Published claims of the seed studies (cited reference values) and verdicts on our measurements.

A published number appears in the paper only through a Claim, with its bibliography key and its place in the
source; our number comes from data. The verdict rule is stated once, here, and printed in the paper.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import macros

VERDICT_RULE = ("agrees: our value (or the range of our repeats) lies within the tolerance of the published value; "
                "same direction: both show an effect of the same sign beyond the tolerance but of different size; "
                "differs: otherwise")


@dataclass(frozen=True)
class Claim:
    """A published value. unit is '%' (a loss or ratio in percent) or a physical unit."""

    id: str
    cite: str          # BibTeX key of the seed
    where: str         # place in the source, e.g. 'Table 1'
    statement: str     # what was measured, in words
    published: float
    unit: str
    tolerance: float   # half-width of the agreement band, in `unit`
    published_text: str = ""  # the source's own wording when it is not a number ('No impact')


@dataclass(frozen=True)
class Outcome:
    claim: Claim
    ours: float
    low: float
    high: float
    context: str       # which of our configurations stands for the source's system

    @property
    def verdict(self) -> str:
        return verdict(self.claim, self.ours, self.low, self.high)


def verdict(claim: Claim, ours: float, low: float | None = None, high: float | None = None) -> str:
    lo = min(ours, low if low is not None else ours)
    hi = max(ours, high if high is not None else ours)
    p, tol = claim.published, claim.tolerance
    if lo - tol <= p <= hi + tol:
        return "agrees"
    if (p > tol and ours > tol) or (p < -tol and ours < -tol):
        return "same direction"
    return "differs"


def table_rows(outcomes: list[Outcome]) -> list[list[str]]:
    rows = []
    for o in outcomes:
        c = o.claim
        pub = c.published_text or f"{macros.fmt(c.published, 0)}\\,{macros.tex_escape(c.unit)}"
        ours = f"{macros.fmt(o.ours, 0)}\\,{macros.tex_escape(c.unit)}"
        spread = f"[{macros.fmt(o.low, 0)}, {macros.fmt(o.high, 0)}]"
        rows.append([f"{macros.tex_escape(c.statement)} \\cite{{{c.cite}}}, {macros.tex_escape(c.where)}",
                     pub, f"{ours} {spread}", macros.tex_escape(o.context), o.verdict])
    return rows


def render_table(outcomes: list[Outcome]) -> str:
    return macros.render_table(
        ["Claim (source)", "Published", "Ours [range]", "Our stand-in", "Verdict"], table_rows(outcomes),
        align="p{0.36\\linewidth}rrp{0.17\\linewidth}l")
