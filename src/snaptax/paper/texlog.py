"""What a LaTeX log says went wrong in the paper: undefined references, citations or macros, and overfull boxes.

latexmk succeeds on a paper whose references print as "??" and whose tables run into the margin; `make pdf` and
`make test` read the log with `problems` and stop (issue 15: no undefined reference and no overfull box).
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import SnaptaxError

# TeX wraps its log at 79 columns; the first line of each message is enough to recognise it.
_UNDEFINED_RE = re.compile(r"^(LaTeX Warning: (Reference|Citation) .* undefined.*"
                           r"|LaTeX Warning: There were undefined references.*"
                           r"|! Undefined control sequence.*)$", re.M)
_OVERFULL_RE = re.compile(r"^(Overfull \\[hv]box .*)$", re.M)


class TypesettingError(SnaptaxError):
    """The paper built, but its log reports an undefined reference or an overfull box."""


def problems(log: str, overfull: bool = True) -> list[str]:
    """The log's complaints, one line each: undefined references/citations/macros, and (if `overfull`) boxes."""
    found = [m.group(1) for m in _UNDEFINED_RE.finditer(log)]
    if overfull:
        found += [m.group(1) for m in _OVERFULL_RE.finditer(log)]
    return found


def check(path: Path, overfull: bool = True) -> None:
    """Raise TypesettingError (one line: how many, and the first) if the log at `path` reports a problem."""
    if not Path(path).is_file():
        raise TypesettingError(f"{path}: no LaTeX log (was the paper built?)")
    found = problems(Path(path).read_text(errors="replace"), overfull)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise TypesettingError(f"{path}: {found[0]}{more}")
