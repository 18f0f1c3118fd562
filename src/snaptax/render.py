"""Paper assets from data/ alone: every study's figures, macros and tables, and the combined claims table.

Each study contributes a renderer (run directory → claim outcomes). Studies with no published run for the
chosen rig and profile are listed in a generated macro so the paper says so instead of failing.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import claims, macros, paths
from .record import published_runs


@dataclass(frozen=True)
class StudyRenderer:
    study: str                                        # directory name under data/<rig>/
    title: str
    render: Callable[..., list[claims.Outcome]]       # (run_dir, figure_dir, generated_dir) → outcomes


def renderers() -> list[StudyRenderer]:
    from .studies import calibration, chain_length, engines
    found = [StudyRenderer(chain_length.STUDY, "Seed 001: snapshot chain length", chain_length.render),
             StudyRenderer(calibration.STUDY, "Rigs and calibration", calibration.render),
             StudyRenderer(engines.STUDY, "Engine comparison", engines.render)]
    return found


def choose_run(rig: str, study: str, profile: str | None) -> Path | None:
    """The newest complete run of the profile; without a run of that profile, the newest of any profile."""
    runs = published_runs(rig, study, profile) or (published_runs(rig, study) if profile else [])
    return runs[-1] if runs else None


def render_all(rig: str = "local", profile: str | None = "quick", figure_dir: Path | None = None,
               generated_dir: Path | None = None) -> dict[str, Path | None]:
    generated_dir = generated_dir or paths.GENERATED_DIR
    used: dict[str, Path | None] = {}
    outcomes: list[claims.Outcome] = []
    for r in renderers():
        run = choose_run(rig, r.study, profile)
        used[r.study] = run
        if run is not None:
            outcomes += r.render(run, figure_dir, generated_dir)
    macros.write_table("claims", claims.render_table(outcomes), generated_dir)
    m = {"VerdictRule": macros.tex_escape(claims.VERDICT_RULE), "RenderRig": macros.tex_escape(rig),
         "ClaimsAgree": str(sum(o.verdict == "agrees" for o in outcomes)),
         "ClaimsTotal": str(len(outcomes))}
    for o in outcomes:
        m[macros.macro_name("Pub", o.claim.id)] = (macros.tex_escape(o.claim.published_text) if o.claim.published_text
                                                   else macros.fmt(o.claim.published))
        m[macros.macro_name("Ours", o.claim.id)] = macros.fmt(o.ours)
        m[macros.macro_name("Verdict", o.claim.id)] = o.verdict
    for study, run in used.items():
        m[macros.macro_name("Have", study)] = "1" if run else "0"
        m[macros.macro_name("Run", study)] = macros.tex_escape(run.name if run else "none")
    macros.write_macros("render", m, generated_dir)
    return used
