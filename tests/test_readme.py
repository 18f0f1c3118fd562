"""The README's first screen says what snaptax is and gives three commands (make pdf, make paper, make test), each
with its time, its disk and whether it needs root, and these agree with the code: make paper's minutes and disk are
what `snaptax plan --profile quick` prints; every `make X` the README (or a page under docs/) names is a Makefile
target."""
import math
import re

import pytest

from snaptax import paths

from .makefile import rules

README = paths.REPO_ROOT / "README.md"
FIRST_SCREEN = 40                      # lines: a terminal's screen
COMMANDS = ("make pdf", "make paper", "make test")
TIME = re.compile(r"(\d+(?:\.\d+)?) (?:min|s)\b")
DISK = re.compile(r"(\d+(?:\.\d+)?) GiB")
ROOT = {"needed": True, "not needed": False}


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def first_screen_table() -> dict[str, dict[str, str]]:
    """The first screen's table of commands: command -> {column: cell}."""
    lines = README.read_text().splitlines()[:FIRST_SCREEN]
    start = next((i for i, line in enumerate(lines) if line.startswith("|") and "command" in cells(line)), None)
    assert start is not None, f"no table with a 'command' column in the README's first {FIRST_SCREEN} lines"
    header = cells(lines[start])
    table = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        row = dict(zip(header, cells(line), strict=True))
        table[row["command"].strip("`")] = row
    return table


def test_the_first_screen_gives_three_commands_with_time_disk_and_root():
    table = first_screen_table()
    assert set(COMMANDS) <= set(table), f"the first screen's commands: {sorted(table)}, want {COMMANDS}"
    for command in COMMANDS:
        row = table[command]
        assert TIME.search(row.get("time", "")), f"{command}: no time (N min) in {row.get('time')!r}"
        assert DISK.search(row.get("disk", "")), f"{command}: no disk figure (N GiB) in {row.get('disk')!r}"
        assert row.get("root") in ROOT, f"{command}: root is {row.get('root')!r}, want one of {sorted(ROOT)}"


def test_the_first_screen_says_what_needs_root():
    from snaptax import studies

    table = first_screen_table()
    measuring_root = any(s.measuring_needs_root for s in studies.REGISTRY)
    assert ROOT[table["make pdf"]["root"]] is False, "make pdf measures nothing and needs no root"
    assert ROOT[table["make paper"]["root"]] is measuring_root
    assert ROOT[table["make test"]["root"]] is measuring_root, "make test measures every study at smoke"


@pytest.mark.committed
def test_make_paper_time_and_disk_are_what_plan_prints():
    """`snaptax plan --profile quick`: the newest committed quick run of each study (else its plan); the README's
    make paper is its total within 10 % and its largest study's disk."""
    from snaptax import expect, profiles, studies

    quick = [expect.expect(s, "local", profiles.get("quick")) for s in studies.REGISTRY]
    total = sum(e.minutes for e in quick if e.known)
    peak = max(e.disk.gib for e in quick if e.disk.gib is not None)
    row = first_screen_table()["make paper"]
    said = float(TIME.search(row["time"]).group(1))
    assert math.isclose(said, total, rel_tol=0.10), f"README: make paper {said} min; plan --profile quick: {total:.1f}"
    assert float(DISK.search(row["disk"]).group(1)) == peak, f"README: make paper {row['disk']}; plan: ~{peak:g} GiB"
    smoke = [expect.expect(s, "local", profiles.get("smoke")) for s in studies.REGISTRY]
    smoke_peak = max(e.disk.gib for e in smoke if e.disk.gib is not None)
    row = first_screen_table()["make test"]
    assert float(DISK.search(row["disk"]).group(1)) == smoke_peak, f"README: make test {row['disk']}"


def section_table(heading: str, first: str) -> dict[str, dict[str, str]]:
    """The first table under a README heading: its first column's cell (backticks stripped) -> {column: cell}."""
    lines = README.read_text().split(f"\n{heading}\n", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    header = cells(lines[start])
    out = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        row = dict(zip(header, cells(line), strict=True))
        out[row[first].split()[0].strip("`")] = row
    return out


MINUTES = re.compile(r"(\d+(?:\.\d+)?) min\b")
# The README's profile times, in the order its cells quote them: the paper's generated values (article.time_values)
PROFILE_TIMES = {"smoke": ("paper.time.smoke.total",), "quick": ("paper.time.quick.total",),
                 "full": ("paper.time.full.total", "paper.time.full_extrapolated.total")}


@pytest.mark.committed
def test_the_times_the_readme_quotes_are_the_papers_generated_values():
    """Every measuring time the README quotes (make paper's, each profile's total, each study's at smoke and quick)
    is the value the paper and its artifact table print, as the committed paper/printed/local-paper.tsv holds it:
    quoted, not typed."""
    from snaptax.paper import printedvalues

    printed = printedvalues.read(printedvalues.path_for(paths.PAPER_DIR, "local", "paper"))
    said = TIME.search(first_screen_table()["make paper"]["time"]).group(1)
    assert said == printed["paper.time.quick.total"], f"README: make paper {said} min"
    profiles = section_table("## Profiles", "profile")
    assert set(profiles) == set(PROFILE_TIMES)
    for profile, keys in PROFILE_TIMES.items():
        cell = profiles[profile]["measuring, all nine studies"]
        assert MINUTES.findall(cell) == [printed[k] for k in keys], (profile, cell)
    full = profiles["full"]["measuring, all nine studies"]
    studies = printed["paper.time.studies"]
    assert f"for {printed['paper.time.full.studies']} of the {studies} studies" in full
    assert f"for {printed['paper.time.full_extrapolated.studies']} of the {studies} studies" in full
    hours = re.search(r"\(about [\d.]+ h\)", printed["paper.time.full_extrapolated.clause"]).group(0)
    assert hours in full, (hours, full)
    rows = section_table("## Studies", "study (notebook)")
    assert rows
    for study, row in rows.items():
        for profile in ("smoke", "quick"):
            assert MINUTES.findall(row[profile]) == [printed[f"paper.time.{profile}.{study}"]], (study, profile)


MAKE = re.compile(r"`make ([a-z][\w-]*)|^\s*make ([a-z][\w-]*)", re.MULTILINE)


@pytest.mark.parametrize("page", ["README.md", "CONTRIBUTING.md", *sorted(
    str(p.relative_to(paths.REPO_ROOT)) for p in (paths.REPO_ROOT / "docs").glob("*.md"))])
def test_every_make_target_named_exists(page):
    named = {a or b for a, b in MAKE.findall((paths.REPO_ROOT / page).read_text())}
    missing = sorted(named - set(rules()))
    assert not missing, f"{page} names make targets the Makefile lacks: {missing}"
