"""A study's run parameters, typed: what its plan decides, its measure writes into the run's manifest
(manifest.parameters) and its analysis reads back (RunRecord.parameters).

Each study with parameters defines one frozen dataclass deriving from StudyParameters in its plan.py.
  to_json()             the JSON the manifest stores: the fields by name, tuples as lists, nested dataclasses as
                        objects (a study's Scale is one, under `scale`), fractions as strings ('7/8'); a field
                        holding None is left out (None only stands for "this run did not record it")
  from_json(d, source)  every field checked against its annotation; a missing, mistyped or unknown key raises
                        ConfigError naming `source` and the field, in one line
A key that older runs lack, or recorded and today's plan no longer writes, is dealt with where old runs are read:
snaptax.record.upgrade (STUDY_PARAMETERS_ADDED, STUDY_PARAMETERS_RETIRED), never here.

The values are kept as the JSON holds them (a float field keeps a JSON integer as the int it is), so what an
analysis computes from them is what it computed from the untyped dictionary.
"""
from __future__ import annotations

import dataclasses
import types
from fractions import Fraction
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

from .errors import ConfigError

P = TypeVar("P", bound="StudyParameters")


@dataclasses.dataclass(frozen=True)
class StudyParameters:
    """Base of every study's parameters record (no fields of its own)."""

    def to_json(self) -> dict[str, Any]:
        """What the run's manifest stores under `parameters`."""
        return _dataclass_to_json(self)

    @classmethod
    def from_json(cls: type[P], d: Any, source: str) -> P:
        """The record a manifest's `parameters` hold, checked; `source` names where `d` comes from."""
        return _dataclass_from_json(cls, d, source, "")


def _dataclass_to_json(obj: Any) -> dict[str, Any]:
    return {f.name: _to_json(v) for f in dataclasses.fields(obj) if (v := getattr(obj, f.name)) is not None}


def _to_json(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _dataclass_to_json(v)
    if isinstance(v, (tuple, list)):
        return [_to_json(x) for x in v]
    if isinstance(v, dict):
        return {k: _to_json(x) for k, x in v.items()}
    if isinstance(v, Fraction):
        return str(v)
    return v


def _shown(v: Any) -> str:
    """A value as an error message quotes it: its type and a repr cut short (the message stays one line)."""
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _dataclass_from_json(cls: Any, d: Any, source: str, prefix: str) -> Any:
    if not isinstance(d, dict):
        raise ConfigError(source, prefix.rstrip(".") or "parameters", f"expected a mapping, got {_shown(d)}")
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(d) - set(names))
    if unknown:
        raise ConfigError(source, prefix + unknown[0], "unknown field (not written by this study's plan)")
    hints = get_type_hints(cls)
    values: dict[str, Any] = {}
    for name in names:
        if name in d:
            values[name] = _from_json(hints[name], d[name], source, prefix + name)
        elif type(None) in get_args(hints[name]):
            values[name] = None          # to_json leaves a None out: an optional field absent is None
        else:
            raise ConfigError(source, prefix + name, "missing")
    return cls(**values)


def _from_json(tp: Any, v: Any, source: str, field: str) -> Any:
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any:
        return v
    if origin in (Union, types.UnionType):
        if v is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"{field}: no JSON reading for {tp!r}")   # a record's annotation, not a run's data
        return _from_json(inner[0], v, source, field)
    if tp is bool:
        ok, what = isinstance(v, bool), "true or false"
    elif tp is int:
        ok, what = isinstance(v, int) and not isinstance(v, bool), "an integer"
    elif tp is float:
        ok, what = isinstance(v, (int, float)) and not isinstance(v, bool), "a number"
    elif tp is str:
        ok, what = isinstance(v, str), "a string"
    elif tp is Fraction:
        if isinstance(v, str):
            try:
                return Fraction(v)
            except (ValueError, ZeroDivisionError):
                pass
        raise ConfigError(source, field, f"expected a fraction as a string ('7/8'), got {_shown(v)}")
    elif origin is tuple:
        if not isinstance(v, (list, tuple)):
            raise ConfigError(source, field, f"expected a list, got {_shown(v)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_json(args[0], x, source, f"{field}[{i}]") for i, x in enumerate(v))
        if len(v) != len(args):
            raise ConfigError(source, field, f"expected a list of {len(args)}, got {_shown(v)}")
        return tuple(_from_json(a, x, source, f"{field}[{i}]") for i, (a, x) in enumerate(zip(args, v, strict=True)))
    elif origin is dict:
        if not isinstance(v, dict):
            raise ConfigError(source, field, f"expected a mapping, got {_shown(v)}")
        return {k: _from_json(args[1], x, source, f"{field}.{k}") for k, x in v.items()}
    elif dataclasses.is_dataclass(tp):
        return _dataclass_from_json(tp, v, source, field + ".")
    else:
        raise TypeError(f"{field}: no JSON reading for {tp!r}")
    if not ok:
        raise ConfigError(source, field, f"expected {what}, got {_shown(v)}")
    return v
