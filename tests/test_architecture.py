"""The house in folders, one direction: the map in CONTRIBUTING.md ("The house") against the code, statically (from
the source's AST; nothing is imported). No circle of imports among snaptax's modules, no layer importing one its row
does not name, every package and module of the map there, and no Python file above 600 lines."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
MAX_LINES = 600


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in sorted((SRC / "snaptax").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The snaptax modules `name` imports anywhere in its source (module level, in functions, under
    TYPE_CHECKING): `from x import y` counts as an import of x.y where that is a module, else of x."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            out |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports(name, path, set(mods)) for name, path in mods.items()}


def house_map() -> list[tuple[str, list[str], set[str]]]:
    """The rows of CONTRIBUTING.md's map: (layer, its packages and modules, the layers it may import)."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = text.split("## The house", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("layer", "---") or not line.startswith("|"):
            continue
        may = set() if cells[3] == "—" else {c.strip() for c in cells[3].split(",")}
        rows.append((cells[0], re.findall(r"`([\w.]+)`", cells[1]), may))
    return rows


def layer_of(module: str, rows: list[tuple[str, list[str], set[str]]]) -> str | None:
    """The layer whose package or module is the longest prefix of `module` (the package `snaptax` itself names
    only its __init__: a module left out of the map belongs to no layer)."""
    best, length = None, -1
    for layer, names, _ in rows:
        for n in names:
            if (module == n or (n != "snaptax" and module.startswith(n + "."))) and len(n) > length:
                best, length = layer, len(n)
    return best


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    assert cycles(graph()) == []


def test_the_map_names_layers_that_exist_and_goes_one_way():
    rows = house_map()
    layers = [layer for layer, _, _ in rows]
    assert len(rows) >= 10 and len(set(layers)) == len(layers)
    mods = modules()
    for layer, names, may in rows:
        assert names, layer
        for n in names:
            assert n in mods, f"CONTRIBUTING.md's map names {n} ({layer}), which does not exist"
        assert may <= set(layers) - {layer}, (layer, may - set(layers))
    # the rows' may-import relation has no circle: "upward" is well defined
    allowed = {layer: may for layer, _, may in rows}
    assert cycles(allowed) == []


def test_every_module_is_in_the_map_and_imports_only_what_its_layer_may():
    rows = house_map()
    allowed = {layer: may for layer, _, may in rows}
    g = graph()
    unmapped = sorted(m for m in g if layer_of(m, rows) is None)
    assert unmapped == [], f"modules in no layer of CONTRIBUTING.md's map: {unmapped}"
    upward = sorted(f"{a} -> {b} ({layer_of(a, rows)} may not import {layer_of(b, rows)})"
                    for a, outs in g.items() for b in outs
                    if layer_of(a, rows) != layer_of(b, rows) and layer_of(b, rows) not in allowed[layer_of(a, rows)])
    assert upward == []


@pytest.mark.parametrize("tree", ["src", "tests", "tools", "docs", "notebooks"])
def test_no_python_file_above_600_lines(tree):
    long = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / tree).rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_checks_see_a_circle_and_an_upward_import():
    """The checks themselves: a circle of two modules is found, and a core module importing the paper is upward."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    rows = house_map()
    assert layer_of("snaptax.errors", rows) == "core" and layer_of("snaptax.paper.render", rows) == "paper"
    assert layer_of("snaptax.paper.macros", rows) == "paper tools" and layer_of("snaptax.nothing", rows) is None
    allowed = {layer: may for layer, _, may in rows}
    assert allowed["core"] == set() and "paper" not in allowed["studies"] and "studies" not in allowed["values"]
