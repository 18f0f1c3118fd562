"""The Makefile read as data, for the tests of what the README and the setup say about it: its targets and each
target's prerequisites (rules `target: prereq ...`; variable assignments and recipes are not rules)."""
import re

from snaptax import paths

RULE = re.compile(r"^([A-Za-z][\w.-]*)\s*:(?![:=])(.*)$")


def rules() -> dict[str, list[str]]:
    """Each target of the Makefile with its prerequisites (.PHONY and other special targets left out)."""
    found: dict[str, list[str]] = {}
    for line in (paths.REPO_ROOT / "Makefile").read_text().splitlines():
        m = RULE.match(line)
        if m:
            found.setdefault(m.group(1), []).extend(m.group(2).split("#")[0].split())
    return found


def needs(target: str) -> set[str]:
    """Every target `make <target>` runs before its own recipe: its prerequisites, theirs, and so on."""
    table, seen, todo = rules(), set(), list(rules()[target])
    while todo:
        t = todo.pop()
        if t not in seen:
            seen.add(t)
            todo.extend(table.get(t, []))
    return seen
