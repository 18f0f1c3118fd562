"""Command line: `python -m snaptax ...`. The only place that turns errors into messages and exit codes."""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__, paths, profiles
from .errors import DeviceRefused, SnaptaxError

if TYPE_CHECKING:
    from .record import RunRef


def _engine_support(rig) -> list[str]:
    lines = []
    dm = "device-mapper" in Path("/proc/devices").read_text()
    for engine in rig.engines:
        if engine == "qcow2":
            ok = shutil.which("qemu-storage-daemon")
            lines.append(f"qcow2: {'available' if ok else 'missing qemu-storage-daemon (qemu-system-common)'}"
                         " (qemu-storage-daemon, qcow2 overlays over QMP)")
        elif engine == "lvmthin":
            if dm and shutil.which("lvm"):
                lines.append("lvmthin: available natively (host has device-mapper)")
            elif shutil.which("qemu-system-x86_64"):
                lines.append("lvmthin: available in a TCG guest (host kernel has no device-mapper)")
            else:
                lines.append("lvmthin: missing qemu-system-x86_64 (qemu-system-x86) for the TCG guest")
        elif engine == "cofw":
            if not shutil.which("nbdkit"):
                state = "missing nbdkit"
            elif not paths.COFW_PLUGIN.exists():
                state = f"not built ({paths.COFW_PLUGIN}; make setup builds it)"
            else:
                state = "available"
            lines.append(f"cofw: {state} (8 KiB copy-on-first-write, a C nbdkit plugin)")
    return lines


def cmd_rig_check(args: argparse.Namespace) -> int:
    from .host import devices, rig as rigmod
    rig = rigmod.load(args.rig)
    emulated = [d.name for d in rig.devices if d.emulated]
    print(f"rig {rig.name} ({rig.kind}{', enabled' if rig.enabled else ', DISABLED'}"
          f"{', allow_destroy' if rig.allow_destroy else ''}) from {rig.source}")
    print(f"  work dir: {rig.work_dir}")
    for d in rig.devices:
        what = {"file": "sparse image file", "block": f"block device {d.path}",
                "spindle": "EMULATED spindle over NBD"}[d.type]
        line = f"  device {d.name}: {d.medium}, {d.capacity / 2**30:.1f} GiB, {what}"
        if d.type == "block":
            try:
                node = devices.check_destroyable(rig, d)
                line += f" -> {node} passes the safety checks (WILL BE OVERWRITTEN)"
            except DeviceRefused as exc:
                line += f" -> refused: {exc}"
        print(line)
    label = "EMULATED (" + ", ".join(emulated) + ")" if emulated else "not emulated (real devices)"
    print("  results are labelled " + label)
    for line in _engine_support(rig):
        print("  engine " + line)
    drift = _tool_drift(rig.name)
    if drift:
        print("  note: " + drift)
    return 0


def _tool_drift(rig: str) -> str:
    """How the installed measuring tools differ from those the newest quick run of each study recorded."""
    from . import provenance, studies
    from .record import load_run, readable_runs

    recorded = [load_run(runs[-1]).manifest.provenance.get("tools", {}) for s in studies.REGISTRY
                if (runs := readable_runs(rig, s.id, profiles.DEFAULT))]
    return provenance.tool_drift(recorded, provenance.tool_versions())


def _check_rig_and_profile(args: argparse.Namespace, reading: bool = False) -> None:
    """Every command that takes --rig/--profile validates both before doing anything (one line, exit 2). A command
    that only reads runs (`reading`) also takes a run selection (profiles.SELECTIONS)."""
    from .host import rig as rigmod

    if getattr(args, "profile", None) is not None:
        profiles.run_profiles(args.profile) if reading else profiles.get(args.profile)
    if getattr(args, "rig", None) is not None:
        rigmod.load(args.rig)


def cmd_run(args: argparse.Namespace) -> int:
    from . import studies
    from .record import RunRecord

    _check_rig_and_profile(args)
    study = studies.get(args.study)
    study.check_part(profiles.get(args.profile), args.part)     # before the code's state is asked about
    _allow_dirty(args)
    out = study.run(args.rig, args.profile, device=args.device, part=args.part)
    print(out)
    print(RunRecord.load(out).validity_line())
    return 0


def _allow_dirty(args: argparse.Namespace) -> None:
    """--allow-dirty: measuring from uncommitted code is allowed (the run keeps their diff); without it a dirty tree
    stops here, before anything starts (record.require_committed_code)."""
    import os

    from .record import ALLOW_DIRTY_ENV, require_committed_code

    if args.allow_dirty:
        os.environ[ALLOW_DIRTY_ENV] = "1"      # also for a notebook's kernel, which inherits the environment
    require_committed_code()


def cmd_render(args: argparse.Namespace) -> int:
    from .paper import render
    from .record import short_run_id

    _check_rig_and_profile(args, reading=True)
    paper = render.render_all(args.rig, args.profile, paper_dir=Path(args.paper_dir) if args.paper_dir else None)
    for r in paper.studies:
        print(f"{r.study}: {short_run_id(r.run.name)}")
    if paper.tool_drift:
        print(f"note: {paper.tool_drift}", file=sys.stderr)
    for sentence in paper.outdated:
        print(f"WARNING: the data no longer support a sentence (marked on the paper's first page): {sentence}",
              file=sys.stderr)
    if paper.printed_changes:
        print(f"{paper.printed_file}: {len(paper.printed_changes)} printed value(s) changed, e.g. "
              f"{paper.printed_changes[0]} (commit the file with the change that made them)")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from . import expect, studies

    _check_rig_and_profile(args)
    profile = profiles.get(args.profile)
    chosen = [studies.get(args.study)] if args.study else list(studies.REGISTRY)
    print(f"measuring at profile {profile.name} on rig {args.rig}:")
    print("\n".join(expect.table([expect.expect(s, args.rig, profile) for s in chosen])))
    if args.study:
        print()
        print(chosen[0].describe_plan(profile))
        print()
        print("\n".join(expect.part_lines(chosen[0], args.rig, profile)))
        print("\n".join(expect.power_lines(chosen[0], args.rig, profile)))
    return 0


def cmd_notebook(args: argparse.Namespace) -> int:
    from . import notebooks

    _check_rig_and_profile(args)
    if args.measure:
        _allow_dirty(args)
    what = "measuring" if args.measure else "on the published run"
    print(f"papermill {args.notebook} (rig={args.rig}, profile={args.profile}, {what})", flush=True)
    notebooks.execute(Path(args.notebook), Path(args.output),
                      {"rig": args.rig, "profile": args.profile, "measure": bool(args.measure)})
    return 0


def cmd_notebooks(args: argparse.Namespace) -> int:
    from . import notebooks

    _check_rig_and_profile(args)
    if args.measure:
        _allow_dirty(args)
    given = [Path(n) for n in args.notebooks]
    pairs = [(n, n if args.in_place else Path(args.output_dir) / n.name) for n in given]
    notebooks.execute_all(pairs, args.rig, args.profile, bool(args.measure))
    return 0


def cmd_claims(args: argparse.Namespace) -> int:
    from . import claimstable
    from .errors import ConfigError

    _check_rig_and_profile(args, reading=True)
    try:
        width = int(args.width)
    except ValueError:
        raise ConfigError("claims", "WIDTH", f"{args.width!r} is not a whole number of columns") from None
    claimstable.check(args.format, width)           # bad input stops before any run is analysed
    print(claimstable.render(claimstable.rows(args.rig, args.profile), args.format, args.rig, args.profile, width),
          end="")
    return 0


def cmd_site(args: argparse.Namespace) -> int:
    from . import site

    _check_rig_and_profile(args, reading=True)
    built = site.build(Path(args.output) if args.output else None, args.rig, args.profile)
    print(f"{len(built.pages)} pages ({built.rows} claims rows, {built.models} models' held-out tests, "
          f"{built.charts} interactive charts), offline: {built.index}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from . import compare, studies
    from .errors import AnalysisError, ConfigError

    if args.runs:
        if len(args.runs) != 2:
            raise ConfigError("compare", "RUNS", "give two run directories, or none (with --rig/--profile)")
        pairs: list[tuple[RunRef | None, RunRef, str]] = [(Path(args.runs[0]), Path(args.runs[1]), "")]
    else:
        from .record import incomplete_sets

        _check_rig_and_profile(args)
        # a set of part runs is compared once complete; until then it is named, not silently left out
        for sid in studies.ids():
            for gap in incomplete_sets(args.rig, sid, args.profile):
                print(f"{sid}: {gap.line()}")
        found = compare.reruns(args.rig, args.profile, studies.ids())
        if not found:
            print(f"no rerun to compare: every {args.profile} run under {compare.shown(paths.data_dir() / args.rig)}"
                  " is committed (a rerun is a run git does not track, e.g. one `make paper` measured)")
            return 0
        pairs = [(r.committed, r.rerun, f"{r.study}: rerun {compare.shown(r.rerun)} " + (
            f"(not committed) against the committed run {compare.shown(r.committed)}" if r.committed else
            f"has no committed {args.profile} run to compare against")) for r in found]
    differs, failed = False, False
    for a, b, named in pairs:
        if named:
            print(named)
        if a is None:
            continue
        try:
            c = compare.compare_runs(a, b)
        except AnalysisError as exc:
            if len(pairs) == 1:
                raise
            # one rerun that cannot be analysed does not hide the others' comparisons
            print(f"snaptax: {exc}", file=sys.stderr)
            failed = True
            continue
        print("\n".join(compare.report(c, all_values=args.all)))
        differs |= not c.reproduced
    if failed:
        return 2
    if differs:
        print("snaptax: some verdicts differ between the runs", file=sys.stderr)
        return 1
    return 0


def cmd_infer(args: argparse.Namespace) -> int:
    from . import inferpoints, operatingpoints, standins
    from .errors import ConfigError
    from .record import short_run_id

    _check_rig_and_profile(args)
    known = [s.id for s in standins.STAND_INS if s.source == "inferred"]
    for sid in args.stand_in or ():
        if sid not in known:
            raise ConfigError("--stand-in", sid, f"not an inferred stand-in (one of: {', '.join(known)})")
    points = inferpoints.infer(args.rig, args.profile, args.stand_in)
    for point in points.values():
        why = operatingpoints.refused(point)
        if why:
            raise ConfigError(str(operatingpoints.path(args.rig)), point.stand_in, f"not written: {why}")
    for s in standins.STAND_INS:
        if s.source != "inferred":
            continue
        p = points.get(s.id)
        print(f"{s.id}: {p.value:.4f} [{p.low:.4f}, {p.high:.4f}] from {short_run_id(p.run)} "
              f"(calibrating {p.calibrating})" if p
              else f"{s.id}: not inferred (no {args.profile} run of {s.value_key.split('.')[0]} gives {s.value_key})")
    if not points:
        print("nothing inferred: no operating point file written")
        return 0
    if args.dry_run:
        print("dry run: nothing written")
        return 0
    written = inferpoints.write(args.rig, points)
    print(f"wrote {written} (commit it: the studies that stand in for these systems measure at it from now on)")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from . import bench
    bench.main(args.only)
    return 0


def cmd_texlog(args: argparse.Namespace) -> int:
    from .paper import texlog
    texlog.check(Path(args.log), overfull=not args.allow_overfull)
    return 0


def cmd_printsize(args: argparse.Namespace) -> int:
    from .paper import printsize
    log = Path(args.log)
    # the figures beside the log's document (make test builds the paper in a temporary copy of paper/)
    figures = log.parent / "figures"
    if args.report:
        small = printsize.smallest(log.read_text(errors="replace") if log.is_file() else "", figures, args.minimum)
        for p in small:
            print(f"{p.what}: smallest text {p.smallest_pt:.1f} pt (below {args.minimum:g} pt)")
        return 0
    found = printsize.check(log, figures, args.minimum)
    print(f"{log}: all {len(found)} figures and scaled tables print their text at {args.minimum:g} pt or more")
    return 0


def cmd_build_plugin(args: argparse.Namespace) -> int:
    from .cofw.build import build_plugin
    from .nbdclient import build_shim
    from .spindle import build as spindle_build
    print(f"cofw plugin: {build_plugin(force=args.force)}")
    print(f"spindle plugin: {spindle_build.build_plugin(force=args.force)}")
    print(f"spindle model core: {spindle_build.build_core(force=args.force)}")
    print(f"nbd simple-replies shim: {build_shim(force=args.force)}")
    return 0


def parser() -> argparse.ArgumentParser:
    from . import claimstable

    # `snaptax` is the console script of pyproject.toml; `python -m snaptax` works without installing
    prog = "snaptax" if Path(sys.argv[0]).name == "snaptax" else "python -m snaptax"
    p = argparse.ArgumentParser(prog=prog, description="Measure the performance tax of snapshots.")
    p.add_argument("--version", action="version", version=f"snaptax {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    rig = sub.add_parser("rig", help="rig files").add_subparsers(dest="rig_command", required=True)
    chk = rig.add_parser("check", help="validate a rig file and say what it is and which engines it supports")
    chk.add_argument("rig")
    chk.set_defaults(func=cmd_rig_check)
    run = sub.add_parser("run", help="measure a study and publish the run under data/")
    run.add_argument("study")
    run.add_argument("--rig", default="local")
    run.add_argument("--profile", default=profiles.DEFAULT)
    run.add_argument("--device", default=None, help="rig device to measure (default: the study's choice)")
    run.add_argument("--part", default=None, metavar="NAME", help="measure one part of a study measured in parts "
                     "(`snaptax plan STUDY` lists them with their planned minutes); the analyses read a set once "
                     "every part is published (default: the whole study)")
    run.add_argument("--allow-dirty", action="store_true", help="measure even though the code has uncommitted "
                     "changes (the run keeps their diff; the paper lists it)")
    run.set_defaults(func=cmd_run)
    plan = sub.add_parser("plan", help="what measuring takes, one line per study (expected minutes, disk, root); "
                          "with a study, also what its plan measures")
    plan.add_argument("study", nargs="?")
    plan.add_argument("--rig", default="local", help="whose published runs give the expected minutes")
    plan.add_argument("--profile", default=profiles.DEFAULT)
    plan.set_defaults(func=cmd_plan)
    ren = sub.add_parser("render", help="figures, macros and tables for the paper from data/ alone")
    ren.add_argument("--rig", default="local")
    ren.add_argument("--profile", default=profiles.DEFAULT)
    ren.add_argument("--paper-dir", default=None,
                     help="a copy of paper/: its .tex files are checked, figures/ and generated/ written there")
    ren.set_defaults(func=cmd_render)
    nb = sub.add_parser("notebook", help="execute a study notebook with papermill (Ctrl-C stops its measurement)")
    nb.add_argument("notebook")
    nb.add_argument("output")
    nb.add_argument("--rig", default="local")
    nb.add_argument("--profile", default=profiles.DEFAULT)
    nb.add_argument("--measure", action="store_true", help="measure a new run (needs root) instead of opening "
                    "the newest published one")
    nb.add_argument("--allow-dirty", action="store_true", help="with --measure: measure even though the code has "
                    "uncommitted changes (the run keeps their diff; the paper lists it)")
    nb.set_defaults(func=cmd_notebook)
    nbs = sub.add_parser("notebooks", help="execute study notebooks in turn, saying before each which of how many it "
                         "is and, measuring, what it and the whole run should take (make paper, make notebooks-commit)")
    nbs.add_argument("notebooks", nargs="+", metavar="NOTEBOOK", help="notebooks/NN_<study>.ipynb")
    where = nbs.add_mutually_exclusive_group(required=True)
    where.add_argument("--output-dir", help="where the executed copies go")
    where.add_argument("--in-place", action="store_true", help="execute the committed notebooks in place, with their "
                       "own parameters, and remove papermill's injected-parameters cell")
    nbs.add_argument("--rig", default="local")
    nbs.add_argument("--profile", default=profiles.DEFAULT)
    nbs.add_argument("--measure", action="store_true", help="measure a new run (needs root) instead of opening "
                     "the newest published one")
    nbs.add_argument("--allow-dirty", action="store_true", help="with --measure: measure even though the code has "
                     "uncommitted changes (the runs keep their diff; the paper lists it)")
    nbs.set_defaults(func=cmd_notebooks)
    cl = sub.add_parser("claims", help="the claims table (published, ours with 95 %% CI, verdict Holm-adjusted "
                        "per seed) from data/ alone, then a tally of the verdicts per seed; rows of runs with late "
                        "measurements and model rows are marked")
    cl.add_argument("--rig", default="local")
    cl.add_argument("--profile", default=profiles.DEFAULT)
    cl.add_argument("--format", default="text", metavar="{" + ",".join(claimstable.FORMATS) + "}",
                    help="text (wrapped to --width), markdown, csv (rows only) or json (rows and tally); default text")
    cl.add_argument("--width", default=str(claimstable.WIDTH), metavar="COLUMNS",
                    help=f"the text form's width (default {claimstable.WIDTH}, at least {claimstable.MIN_WIDTH})")
    cl.set_defaults(func=cmd_claims)
    st = sub.add_parser("site", help="the interactive offline companion site from the committed notebooks and the "
                        "claims table and models' held-out tests of data/ (nothing measured or executed; vendored "
                        "Vega, nothing fetched) -> build/site/index.html")
    st.add_argument("--rig", default="local")
    st.add_argument("--profile", default=profiles.DEFAULT)
    st.add_argument("--output", default=None, metavar="DIR", help=f"where the site goes (default {paths.SITE_DIR})")
    st.set_defaults(func=cmd_site)
    cmp = sub.add_parser("compare", help="compare two runs' values and verdicts (exit 1 if a verdict differs); "
                         "without runs: every rerun (a run git does not track) against the committed run of its "
                         "study and profile")
    cmp.add_argument("runs", nargs="*", help="two run directories")
    cmp.add_argument("--rig", default="local")
    cmp.add_argument("--profile", default=profiles.DEFAULT)
    cmp.add_argument("--all", action="store_true", help="list every value, not only the inconsistent ones")
    cmp.set_defaults(func=cmd_compare)
    inf = sub.add_parser("infer", help="the stand-ins' operating points inferred from the newest runs of the sweeps "
                         "that infer them -> rigs/operating-points/<rig>.yaml (snaptax.standins; values outside their "
                         "range are refused)")
    inf.add_argument("--rig", default="local")
    inf.add_argument("--profile", default=profiles.DEFAULT)
    inf.add_argument("--dry-run", action="store_true", help="print what would be written, write nothing")
    inf.add_argument("--stand-in", action="append", metavar="ID",
                     help="infer only this stand-in (repeatable); the others keep the points the rig's file gives")
    inf.set_defaults(func=cmd_infer)
    b = sub.add_parser("bench", help="harness and engine benchmarks -> bench/latest.json")
    b.add_argument("--only", nargs="*", default=None, help="run only these benchmark groups")
    b.set_defaults(func=cmd_bench)
    tl = sub.add_parser("texlog", help="fail if a LaTeX log reports an undefined reference or an overfull box")
    tl.add_argument("log")
    tl.add_argument("--allow-overfull", action="store_true", help="report only undefined references and macros")
    tl.set_defaults(func=cmd_texlog)
    ps = sub.add_parser("printsize", help="fail if a figure or scaled table of a built paper prints text below "
                        "7 pt (reads the LaTeX log's print-size lines and the figures' SVGs)")
    ps.add_argument("log")
    ps.add_argument("--minimum", type=float, default=7.0, help="smallest legible size in points (default 7)")
    ps.add_argument("--report", action="store_true", help="list what prints too small and exit 0")
    ps.set_defaults(func=cmd_printsize)
    bp = sub.add_parser("build-plugin", help="compile the C objects (the cofw engine's and the spindle "
                        "emulator's nbdkit plugins, the emulator's model core, fio's NBD simple-replies shim) when "
                        "missing or older than their sources (make setup runs it; $CC picks the compiler)")
    bp.add_argument("--force", action="store_true", help="rebuild even when the plugin is current")
    bp.set_defaults(func=cmd_build_plugin)
    _document_choices(p)
    return p


def _document_choices(p: argparse.ArgumentParser) -> None:
    """Every command's --rig, --profile and study argument says in --help what it may be. The values are checked
    where they are used (one line naming the field), not by argparse, whose refusal is a usage message; and a rig
    may also be a path."""
    from . import studies
    from .host import rig as rigmod

    choices = {
        "rig": (None, f"a rig in rigs/ ({', '.join(rigmod.names())}) or the path of a rig file"),
        "profile": ("{" + ",".join(profiles.PROFILES) + "}", f"default {profiles.DEFAULT}"
                    + "; render, claims and site also read 'paper': each study's full run, else its quick one"),
        "study": ("STUDY", f"one of: {', '.join(studies.ids())}"),
    }
    for action in p._actions:       # argparse has no public walk over a parser's arguments
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                _document_choices(child)
        elif action.dest in choices:
            metavar, text = choices[action.dest]
            action.metavar = metavar or action.metavar
            action.help = f"{action.help}; {text}" if action.help else text


def main(argv: list[str] | None = None) -> int:
    from .host.procs import install_sigterm_as_exit
    install_sigterm_as_exit()
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except SnaptaxError as exc:
        print(f"snaptax: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("snaptax: interrupted; everything started was stopped and no partial run was kept", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
