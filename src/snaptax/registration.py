"""The pre-registration: every seed statement the paper judges, with its published value, tolerance and role, fixed
before the runs that judge it.

paper/preregistration/<YYYYMMDD>-<n>.yaml, append-only: a new registration is a new file, never an edit of an older
one (SHA256SUMS in that directory holds each file's hash, and a test checks them). A run records the registration
in force when it was measured (the manifest's `registration`: file name and sha256, record.writer); render judges
its claims by that registration's tolerances and roles, and marks a run measured before any registration as not
pre-registered (judged by the newest registration, never refused).

One rule sets every tolerance (TOLERANCE_RULE): the larger of
  - the seed's stated precision (`precision`, in the claim's unit: half the last digit of a table or log value,
    the resolution of a graph it was read from, the width of an "about"), and
  - the smallest effect that matters to a practitioner, declared once per kind of quantity (SMALLEST_EFFECT).
A statement is one of three roles: judged (a held-out test of its stand-in), calibration (the stand-in's operating
point is inferred from it: it cannot also test it; issue 46's stand-in record, snaptax.standins), or unjudged (no
stand-in expresses it, with the reason).
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from . import paths
from .errors import ConfigError

Kind = Literal["rate_pct", "amplification", "time", "time_change_pct", "per_snapshot_pct", "share_pct"]
# The smallest effect that matters, per kind of quantity (in the claim's unit; for `time`, relative to the published
# value). A practitioner sizing storage does not act on less than 5 pp of a rate, a fifth of an extra host I/O per
# guest I/O, a tenth of a duration, or 2 pp per snapshot of a chain.
SMALLEST_EFFECT: dict[Kind, float] = {"rate_pct": 5.0, "amplification": 0.2, "time": 0.10,
                                      "time_change_pct": 5.0, "per_snapshot_pct": 2.0, "share_pct": 5.0}
Role = Literal["judged", "calibration", "unjudged"]
ROLES: tuple[Role, ...] = ("judged", "calibration", "unjudged")
TOLERANCE_RULE = ("tolerance = the larger of the seed's stated precision and the smallest effect that matters "
                  "(5 pp of a rate, a share or a change in per cent; 0.2 of an amplification factor; 10 % of a "
                  "duration; 2 pp per snapshot)")


@dataclass(frozen=True)
class Registered:
    """One seed statement as registered."""

    id: str
    label: str               # the seed claim (C001-1 …)
    cite: str
    where: str
    statement: str
    unit: str
    kind: Kind
    no_effect: float
    published: float         # nan for a direction without a number, and for unjudged statements without one
    published_text: str
    precision: float
    precision_basis: str
    role: Role
    direction: int = 0       # a direction-only statement: +1 (above no effect) or -1 (below); 0: it has a number
    stand_in: str = ""       # which stand-in (snaptax.standins) tests it
    reason: str = ""         # unjudged: why no stand-in expresses it

    @property
    def smallest_effect(self) -> float:
        base = SMALLEST_EFFECT[self.kind]
        return base * abs(self.published) if self.kind == "time" else base

    @property
    def tolerance(self) -> float:
        """TOLERANCE_RULE."""
        return max(self.precision, self.smallest_effect)


@dataclass(frozen=True)
class Registration:
    file: str                # its name under paper/preregistration/
    sha256: str
    date: str
    claims: dict[str, Registered]

    def get(self, claim_id: str) -> Registered:
        try:
            return self.claims[claim_id]
        except KeyError:
            raise ConfigError(self.file, claim_id, "not registered (add it in a new registration before measuring "
                              "what judges it)") from None


def directory() -> Path:
    return paths.PAPER_DIR / "preregistration"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _float(d: dict[str, Any], key: str) -> float:
    v = d.get(key)
    return math.nan if v is None else float(v)


def parse(path: Path) -> Registration:
    """A registration file, checked: every field present and typed, roles known, unique ids."""
    raw = yaml.safe_load(path.read_text())
    src = str(path.name)
    if not isinstance(raw, dict) or not isinstance(raw.get("claims"), list):
        raise ConfigError(src, "claims", "expected a list of claims")
    claims: dict[str, Registered] = {}
    for i, c in enumerate(raw["claims"]):
        where = f"claims[{i}]"
        try:
            r = Registered(id=str(c["id"]), label=str(c["label"]), cite=str(c["cite"]), where=str(c["where"]),
                           statement=str(c["statement"]), unit=str(c["unit"]), kind=c["kind"],
                           no_effect=float(c["no_effect"]), published=_float(c, "published"),
                           published_text=str(c.get("published_text", "")),
                           precision=_float(c, "precision"), precision_basis=str(c.get("precision_basis", "")),
                           role=c["role"], direction=int(c.get("direction", 0)), stand_in=str(c.get("stand_in", "")),
                           reason=str(c.get("reason", "")))
        except KeyError as exc:
            raise ConfigError(src, f"{where}.{exc.args[0]}", "missing") from None
        except (TypeError, ValueError) as exc:
            raise ConfigError(src, where, str(exc)) from None
        if r.kind not in SMALLEST_EFFECT:
            raise ConfigError(src, f"{where}.kind", f"{r.kind!r} is not one of {', '.join(SMALLEST_EFFECT)}")
        if r.role not in ROLES:
            raise ConfigError(src, f"{where}.role", f"{r.role!r} is not one of {', '.join(ROLES)}")
        if r.role == "unjudged" and not r.reason:
            raise ConfigError(src, f"{where}.reason", "an unjudged statement says why")
        if r.role != "unjudged" and (r.direction == 0) == math.isnan(r.published):
            raise ConfigError(src, f"{where}.published", "a number, or a direction (+1/-1) without one")
        if r.id in claims:
            raise ConfigError(src, f"{where}.id", f"{r.id!r} registered twice")
        claims[r.id] = r
    return Registration(path.name, sha256(path), str(raw.get("date", "")), claims)


def files() -> list[Path]:
    """The registrations, oldest first (their names sort by date)."""
    return sorted(p for p in directory().glob("*.yaml"))


def newest() -> Registration | None:
    found = files()
    return _current(found[-1]) if found else None


@functools.lru_cache(maxsize=32)
def _parsed(path: Path, mtime_ns: int, size: int) -> Registration:
    """A registration file parsed once per content stamp: every run judged hashes and reads the same few files."""
    return parse(path)


def _current(path: Path) -> Registration:
    st = path.stat()
    return _parsed(path, st.st_mtime_ns, st.st_size)


def by_hash(sha: str) -> Registration | None:
    """The registration a run recorded (None when no committed file has that hash)."""
    for p in files():
        found = _current(p)
        if found.sha256 == sha:
            return found
    return None


def recorded_in(run: Path) -> dict[str, str] | None:
    """The registration a published run's manifest recorded (None: before any, or a manifest without the field:
    the record formats before the first registration did not have it). Reads the one field, not the whole run."""
    try:
        found = json.loads((run / "manifest.json").read_text()).get("registration")
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, dict) else None


def recorded() -> dict[str, str] | None:
    """What a run records at measure time: the newest registration's file name and hash (None before any)."""
    found = files()
    return {"file": found[-1].name, "sha256": sha256(found[-1])} if found else None


__all__ = ["Kind", "SMALLEST_EFFECT", "Role", "ROLES", "TOLERANCE_RULE", "Registered", "Registration", "directory",
           "parse", "files", "newest", "by_hash", "recorded", "recorded_in", "sha256"]
