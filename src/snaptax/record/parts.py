"""A study measured in parts, read as one record (issue 49.1).

A study too long for one measuring window is measured in parts: each part is a published run of its own (its
manifest's `part`: its name and the set of part names it belongs to), measuring some of the study's variants (for
chain_length and chain_bulk one configuration in one replicate; runs of earlier code measured one configuration with
all its replicates) with their own no-snapshot baselines, so that no paired ratio crosses two runs. Once every part of
a set is published, the analyses read the set as one record (CombinedRecord), as they read a whole run.

A set is complete when it has a run for every part name of its set, all of the same study, rig, profile name and
code (the commit the manifests' provenance records, and the uncommitted diff where a run measured with one) and the
same conditions (SET_CONDITIONS, compared by a hash of them in the set's key): runs of other code or under other
conditions are another set, never mixed in and never an error. Those are the fields compared across parts; the
set's provenance (commit, tools, host) is its first part's. Of several runs of one part in a set, the newest is
read. An incomplete set is never read. readable_runs lists, oldest first, what can be read of a study at a profile:
its whole runs and its complete sets; the newest of them (the newer of the newest whole run and the newest complete
set) is what "the newest run of a study" means everywhere (Study.newest_run).

A set's name is its parts' run ids joined by SET_JOIN; where a run id is printed in little room (the paper), a set's
is shortened by short_run_id.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import provenance
from .reader import RunRecord, published_runs
from .schema import MANIFEST, Manifest, Measurement, RecordError, RunPart

if TYPE_CHECKING:
    import pandas as pd

SET_JOIN = "+"     # a set's name: its part runs' ids joined by this (no run id holds it: ids are slugs)
# What the parts of one set must have measured under, beside the study, rig, profile name and code: the profile's
# settings, the rig's kind, the study's parameters (its scale, device, the stand-ins' operating points), the spindle
# emulator's version, the pre-registration in force and the versions of the tools that measured (fio, QEMU, nbdkit,
# Python: the code outside the repository). Compared across parts through the set's key (conditions_of), so that parts
# measured under different conditions are different sets. Not compared: the host (its CPU model, kernel and the time
# its provenance was collected; a set may straddle two sessions on two hosts, as replicates may), so a set's
# provenance is its first part's.
SET_CONDITIONS = ("profile", "rig_kind", "parameters", "emulator_version", "registration", "tools")


def short_run_id(run_id: str) -> str:
    """A run's id where it is printed in little room (the paper's tables and sentences, in \\texttt, which TeX does
    not break): a whole run's id as it is; a set's (its parts' ids joined by SET_JOIN, 120 characters and more) as
    the start and profile of its first part and its number of parts, e.g. '20261201T080000Z-full (9 parts)': as
    long as a whole run's id, where the first part's whole id (40 characters and more) is about a column of the
    paper's body. `run_id` may be named with its study ('chain_length/<run id>')."""
    first, *rest = run_id.split(SET_JOIN)
    if not rest:
        return run_id
    study, sep, part = first.rpartition("/")
    # a part's id is its start, its profile and its part's name (writer.run_id_now), the last with '-' of its own
    started = "-".join(part.split("-")[:2])
    return f"{study}{sep}{started} ({len(rest) + 1} parts)"


@dataclass(frozen=True)
class PartSet:
    """A complete set of part runs of one study: one published run directory per part name of the set, in the set's
    order. Its name (the runs' ids joined) names the combined record wherever a run's name is shown."""

    runs: tuple[Path, ...]

    @property
    def name(self) -> str:
        return SET_JOIN.join(r.name for r in self.runs)

    @property
    def parent(self) -> Path:
        """The study's directory under data/ that holds the part runs."""
        return self.runs[0].parent

    def __str__(self) -> str:
        return str(self.parent / self.name)


# What names a readable run: a whole run's directory, or a complete set of part runs.
RunRef = Path | PartSet


@dataclass(frozen=True)
class IncompleteSet:
    """A set of part runs that lacks a part (never read): the code and conditions it measured under (their
    hashes' first characters), the parts it has, and those it lacks."""

    code: str
    conditions: str
    have: dict[str, Path]
    missing: tuple[str, ...]

    def line(self) -> str:
        return (f"incomplete set of parts (not read until every part is published), code {self.code}, conditions "
                f"{self.conditions}: has {', '.join(f'{n} ({p.name})' for n, p in self.have.items())}; lacks "
                f"{', '.join(self.missing)}")


def _sort_key(ref: RunRef) -> tuple[str, str]:
    """When a readable run was started (the timestamp that begins a run id), for ordering; a set's is its newest
    part's, the run that completed it."""
    names = [ref.name] if isinstance(ref, Path) else [r.name for r in ref.runs]
    newest = max(names, key=lambda n: (n.split("-")[0], n))
    return newest.split("-")[0], newest


def code_of(m: Manifest, run: Path) -> str:
    """The code a run measured with: its provenance's commit, with a hash of its uncommitted diff when it kept one
    (two runs of one commit with different uncommitted changes measured different code). A run keeps no diff when
    its changes left the code that measures as committed (provenance.uncommitted_diff was empty): the commit's code."""
    commit = str(m.provenance.get("git", {}).get("commit") or "unknown")
    diff = run / provenance.UNCOMMITTED_DIFF
    return commit + "+" + hashlib.sha256(diff.read_bytes()).hexdigest()[:12] if diff.is_file() else commit


def conditions_of(m: Manifest) -> dict[str, Any]:
    """What a run measured under that its set's parts must share (SET_CONDITIONS), as JSON."""
    return {"profile": asdict(m.profile), "rig_kind": m.rig_kind, "parameters": m.parameters,
            "emulator_version": m.emulator_version, "registration": m.registration,
            "tools": m.provenance.get("tools", {})}


def _canonical(value: Any) -> str:
    """One text per JSON value, keys sorted: what two parts' conditions are compared as (NaN, which a study's
    parameters may hold, is then equal to itself)."""
    return json.dumps(value, sort_keys=True, default=str)


SetKey = tuple[str, str, str, str, str, tuple[str, ...]]


def _set_key(m: Manifest, part: RunPart, run: Path) -> SetKey:
    conditions = hashlib.sha256(_canonical(conditions_of(m)).encode()).hexdigest()[:12]
    return m.study, m.rig, m.profile.name, code_of(m, run), conditions, part.set


def _scan(rig: str, study: str, profile: str) -> tuple[list[RunRef], list[IncompleteSet]]:
    whole: list[RunRef] = []
    sets: dict[SetKey, dict[str, Path]] = {}
    for run in published_runs(rig, study, profile):       # oldest first: a later run of a part replaces an earlier
        # the one field first: runs of formats before 5 have none (they measured their study whole), and only a
        # part's manifest is read whole (for its set, code and conditions)
        if not json.loads((run / MANIFEST).read_text()).get("part"):
            whole.append(run)
            continue
        m = RunRecord.load(run).manifest
        assert m.part is not None
        sets.setdefault(_set_key(m, m.part, run), {})[m.part.name] = run
    complete: list[RunRef] = []
    incomplete = []
    for key, found in sets.items():
        names = key[-1]
        missing = tuple(n for n in names if n not in found)
        if missing:
            incomplete.append(IncompleteSet(key[3][:10], key[4], {n: found[n] for n in names if n in found},
                                            missing))
        else:
            complete.append(PartSet(tuple(found[n] for n in names)))
    return sorted(whole + complete, key=_sort_key), incomplete


def readable_runs(rig: str, study: str, profile: str) -> list[RunRef]:
    """What can be read of a study at a profile on a rig, oldest first: its whole runs and its complete sets of
    part runs (incomplete sets are left out: incomplete_sets)."""
    return _scan(rig, study, profile)[0]


def incomplete_sets(rig: str, study: str, profile: str) -> list[IncompleteSet]:
    """The sets of part runs of a study at a profile that lack a part (never read)."""
    return _scan(rig, study, profile)[1]


def load_run(ref: RunRef | str) -> RunRecord:
    """The record of a readable run: RunRecord.load for a whole run's directory, CombinedRecord for a set."""
    if isinstance(ref, PartSet):
        return CombinedRecord.load(ref)
    return RunRecord.load(ref)


def _same(where: str, field: str, values: Sequence[Any], names: Sequence[str]) -> Any:
    """The one value every part recorded for `field` (compared as JSON text: _canonical); RecordError naming the
    parts' values where they differ (for objects, only the keys that differ: a study's parameters are long)."""
    if all(_canonical(v) == _canonical(values[0]) for v in values[1:]):
        return values[0]
    if all(isinstance(v, dict) for v in values):
        keys = sorted({k for v in values for k in v
                       if any(_canonical(v.get(k)) != _canonical(w.get(k)) for w in values)})
        values = [{k: v.get(k) for k in keys} for v in values]
    shown = "; ".join(f"{n}: {v!r}" for n, v in zip(names, values, strict=True))
    raise RecordError(f"{where}: the parts differ in {field} ({shown}); they are not one set")


def combined_manifest(parts: Sequence[RunRecord], where: str) -> Manifest:
    """The manifest the set reads as: named by its part runs' ids joined, the parts' study, rig, code and conditions
    (SET_CONDITIONS; each the same in every part, checked: readable_runs never combines parts that differ, a set
    built by hand raises RecordError), their variants and events together, their counts and planned figures summed,
    from the first start to the last publication (its measured time is the sum of the parts':
    Manifest.measured_seconds). Its provenance is the first part's (its tools are every part's; its host, which is not
    compared, may not be); `parts` keeps the parts' own manifests."""
    ms = [p.manifest for p in parts]
    names = [m.run_id for m in ms]
    for field in ("study", "rig"):
        _same(where, field, [getattr(m, field) for m in ms], names)
    _same(where, "code", [code_of(p.manifest, p.path) for p in parts], names)
    conditions = [conditions_of(m) for m in ms]
    for field in SET_CONDITIONS:
        _same(where, field, [c[field] for c in conditions], names)
    variants: dict[str, dict] = {}
    for m in ms:
        if shared := set(variants) & set(m.variants):
            raise RecordError(f"{where}: variant(s) {sorted(shared)} measured in more than one part")
        variants.update(m.variants)
    first = ms[0]
    measured = [d for m in ms for d in m.measured_devices]
    return Manifest(
        first.format_version, first.study, SET_JOIN.join(names), first.profile, first.rig, first.rig_kind,
        first.rig_file, any(m.emulated for m in ms), first.devices, tuple(dict.fromkeys(measured)),
        first.parameters, variants, tuple(sorted((e for m in ms for e in m.events), key=lambda e: e.get("utc", ""))),
        first.provenance, min(m.started_utc for m in ms), max(m.finished_utc for m in ms),
        sum(m.measurements for m in ms), sum(m.planned_points for m in ms), sum(m.planned_seconds for m in ms),
        sum(m.lock_wait_s for m in ms), first.emulator_version, first.registration, None, tuple(ms))


class CombinedRecord(RunRecord):
    """A complete set of part runs read as one run: what RunRecord gives an analysis, over all the parts. Its path
    names the set (the study's directory / the set's name) and is no directory: results()'s `path` column holds each
    measurement's absolute directory, so `record.path / row.path` still finds it."""

    def __init__(self, parts: Sequence[RunRecord]) -> None:
        if not parts:
            raise RecordError("a set of parts needs at least one part run")
        self.parts = tuple(parts)
        name = SET_JOIN.join(p.run_id for p in parts)
        where = str(parts[0].path.parent / name)
        declared = [p.manifest.part for p in parts]
        if any(d is None for d in declared):
            whole = [p.run_id for p, d in zip(parts, declared, strict=True) if d is None]
            raise RecordError(f"{where}: {', '.join(whole)} measured the whole study, not a part")
        sets = _same(where, "part set", [d.set for d in declared if d], [p.run_id for p in parts])
        got = [d.name for d in declared if d]
        if got != list(sets):
            raise RecordError(f"{where}: the parts are {got}, not one run of each part of the set {list(sets)} in "
                              "its order")
        super().__init__(parts[0].path.parent / name, combined_manifest(parts, where))

    @classmethod
    def load(cls, path: Path | str | PartSet) -> CombinedRecord:
        if not isinstance(path, PartSet):
            raise RecordError(f"{path}: a combined record is read from a set of part runs, not one directory")
        return cls([RunRecord.load(r) for r in path.runs])

    def variant_dir(self, variant: str) -> Path:
        """measurements/<variant>/ of the part that measured the variant (variants are the parts', never shared);
        of the first part for a variant none measured, which does not exist, as in a whole run without it."""
        for p in self.parts:
            if variant in p.manifest.variants:
                return p.variant_dir(variant)
        return self.parts[0].variant_dir(variant)

    @cached_property
    def measurements(self) -> tuple[Measurement, ...]:
        return tuple(sorted((m for p in self.parts for m in p.measurements), key=lambda m: (m.variant, m.index)))

    def results(self) -> pd.DataFrame:
        """The parts' results.csv together; `path` made absolute (each part's own directory + its relative path)."""
        import pandas as pd

        frames = [df.assign(path=[str(p.path.resolve() / rel) for rel in df["path"]])
                  for p in self.parts for df in [p.results()]]
        return pd.concat(frames, ignore_index=True)

    def counters(self) -> pd.DataFrame:
        import pandas as pd

        return pd.concat([p.counters() for p in self.parts], ignore_index=True)

    def extra_json(self, name: str) -> Any:
        """A study's own JSON file, where the parts' merge without a choice: None when no part has it; the one
        document when only one part has it or all that have it agree; objects with no key in common joined. Anything
        else raises RecordError (which part's to read would be a guess)."""
        found = [(p.run_id, d) for p in self.parts if (d := p.extra_json(name)) is not None]
        if not found:
            return None
        docs = [d for _, d in found]
        if all(d == docs[0] for d in docs[1:]):
            return docs[0]
        if all(isinstance(d, dict) for d in docs):
            keys = [k for d in docs for k in d]
            if len(keys) == len(set(keys)):
                return {k: v for d in docs for k, v in d.items()}
        raise RecordError(f"{self.path}: {name} differs between the parts {', '.join(r for r, _ in found)} and they "
                          "cannot be merged")


__all__ = ["PartSet", "RunRef", "IncompleteSet", "CombinedRecord", "readable_runs", "incomplete_sets", "load_run",
           "combined_manifest", "code_of", "conditions_of", "short_run_id", "SET_JOIN", "SET_CONDITIONS"]
