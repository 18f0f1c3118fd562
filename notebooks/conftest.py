"""nbval's checked cells compared at printed precision (snaptax.printed): a checked cell's text must print the same
words and the same numbers up to one unit in their last printed place, so that a float's last bits, which differ
between hosts' CPUs and BLAS kernels, cannot fail a check while a change of the analysis does."""
from __future__ import annotations

from nbval.plugin import IPyNbCell

from snaptax.printed import same_text


class PrintedText(str):
    """A cell output's text whose equality is snaptax.printed.same_text (nbval compares outputs with != )."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and same_text(str(self), str(other))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__


_sanitize = IPyNbCell.sanitize


def _sanitize_printed(self, s):  # type: ignore[no-untyped-def]
    out = _sanitize(self, s)
    return PrintedText(out) if isinstance(out, str) else out


IPyNbCell.sanitize = _sanitize_printed
