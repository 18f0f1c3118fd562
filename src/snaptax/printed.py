"""Numbers compared at the precision they are printed with.

A recomputed float may differ from the one computed on another host in its last bits: numpy and OpenBLAS pick
their SIMD kernels per CPU, so a sum, a least-squares solve or an iterative fit (curve_fit stops within its own
tolerance, 1.5e-8 relative) ends a little elsewhere (seen: 2.1e-6 relative on an interval bound near zero, between
an AMD EPYC and an Intel host). Nothing the project checks may depend on those bits. What a reader sees is the
printed number, so that is what is compared: two texts are the same when their words and punctuation are the same
and each pair of numbers in them differs by at most one unit in the last printed place (a value on a rounding
boundary prints either way) or by REL_TOL of its size (a number printed with more significant digits than the
analysis can hold steady, e.g. a table cell of 1625160.56). A real change of the analysis moves a printed number
by more than that; a change of a float's last bits cannot.

Used by the check of the paper's printed values (snaptax.paper.printedvalues) and by nbval's checked cells
(notebooks/conftest.py).
"""
from __future__ import annotations

import math
import re

# Numbers as the project and pandas print them: an optional sign, digits with the paper's thin-space (U+2009)
# thousands separators, an optional fraction and exponent, standing alone: digits joined to a letter, a dot or a
# hyphen are part of a name and compare as text (run ids such as 20261128T034135Z-quick, labels such as p64-w25 or
# cover-1-8, versions such as 7.2.22). A sentence's closing full stop may follow a number.
_NUMBER = re.compile(r"(?<![\w.\-\u2212])[-+\u2212]?\d(?:[\d\u2009]*\d)?(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w\-]|\.\w)")
_SPACE = re.compile(r"\s+")
# Above the numerical noise between hosts (2.1e-6 relative seen) by a factor of 50; far below any change of the
# analysis a reader would notice (a hundredth of a per cent).
REL_TOL = 1e-4


def _unit(token: str) -> float:
    """One unit in the last printed place of a number token."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def _number(token: str) -> float:
    return float(token.replace("\u2009", "").replace("\u2212", "-"))


def numbers_same(a: str, b: str) -> bool:
    """Two printed numbers are the same at the precision printed (see the module's docstring)."""
    x, y = _number(a), _number(b)
    if x == y:
        return True
    unit = max(_unit(a), _unit(b))
    return abs(x - y) <= unit * (1 + 1e-9) + REL_TOL * max(abs(x), abs(y))


def _split(text: str) -> tuple[list[str], list[str]]:
    """The text's words (whitespace runs collapsed: a column may widen when a number grows a digit) and its
    numbers."""
    numbers = _NUMBER.findall(text)
    words = [_SPACE.sub(" ", w).strip() for w in _NUMBER.split(text)]
    return words, numbers


def same_text(a: str, b: str) -> bool:
    """Two printed texts (a value, a table, a sentence) are the same at printed precision: identical words and
    punctuation (whitespace runs count as one space), and every pair of numbers the same (numbers_same)."""
    if a == b:
        return True
    words_a, numbers_a = _split(a)
    words_b, numbers_b = _split(b)
    return (words_a == words_b and len(numbers_a) == len(numbers_b)
            and all(numbers_same(x, y) for x, y in zip(numbers_a, numbers_b, strict=True)))


def first_difference(a: str, b: str) -> str:
    """Where two texts differ at printed precision, in a few words (for a failure message); '' when they do not."""
    if same_text(a, b):
        return ""
    words_a, numbers_a = _split(a)
    words_b, numbers_b = _split(b)
    if words_a != words_b:
        for wa, wb in zip(words_a, words_b, strict=False):
            if wa != wb:
                return f"text {wa[:60]!r} against {wb[:60]!r}"
        return f"{len(words_a)} against {len(words_b)} pieces of text"
    if len(numbers_a) != len(numbers_b):
        return f"{len(numbers_a)} against {len(numbers_b)} numbers"
    for x, y in zip(numbers_a, numbers_b, strict=True):
        if not numbers_same(x, y):
            return f"{x} against {y}"
    return "?"   # unreachable: same_text said they differ


def is_negative_zero_text(text: str) -> bool:
    """'-0', '-0.00' …: a value that rounds to zero printed with a sign (which depends on its last bits)."""
    return bool(re.fullmatch(r"[-\u2212]0(?:\.0+)?", text)) and math.isfinite(_number(text))


__all__ = ["REL_TOL", "numbers_same", "same_text", "first_difference", "is_negative_zero_text"]
