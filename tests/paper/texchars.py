"""The characters a LaTeX source declares for pdfLaTeX's utf8 input (shared by the paper's tests)."""
from __future__ import annotations

import re

DECLARED = re.compile(r"\\DeclareUnicodeCharacter\{([0-9A-Fa-f]+)\}")


def declared_characters(tex: str) -> set[str]:
    """Every character `tex` declares with \\DeclareUnicodeCharacter."""
    return {chr(int(h, 16)) for h in DECLARED.findall(tex)}
