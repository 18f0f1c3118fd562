"""Drive profiles and device specs from YAML: rigs/spindles/<profile>.yaml, rigs/spindles/devices.yaml, and
the `spindle:` mapping of a rig device (validated here, typed by profiles.py).

A `spindle:` mapping is either {device: NAME} (a named array from devices.yaml) or an inline device:
    kind: disk | raid1 | raid5 | tier
    profile: NAME              disk/raid1/raid5: every member uses this profile
    members: N                 raid5 (raid1 is always 2)
    stripe_unit: 64K           raid5
    overrides: {write_cache: true, scheduler: clook, ...}   drive-profile fields changed for this device
    ssd: {...}  hdd: {...}     tier: two inline devices; extent, ssd_fraction, cycle (e.g. 120s),
                               window_cycles, heat_max_io (64K), migration_mb_s, max_migrations_per_cycle
                               (optional), migration_chunk, new_allocation (see profiles.TierSpec)
    cache: {size: 128M, battery_backed: true, destage: eager, ...}
                               any kind: an array controller's write cache in front of the device (profiles.CacheSpec,
                               ctrlcache.py); optional: write_back_unprotected, destage (eager | watermark),
                               high_watermark, low_watermark, destage_depth, overhead_us, link_mb_s, segment
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..errors import ConfigError, MissingTool
from ..fio import parse_size
from ..paths import SPINDLES_DIR
from .profiles import (
    CacheSpec,
    ControllerSpec,
    DeviceSpec,
    DiskSpec,
    DriveProfile,
    Profile,
    Raid1Spec,
    Raid5Spec,
    SeekSpec,
    SsdProfile,
    TierSpec,
    ZeroProfile,
    validate_cache,
    validate_profile,
    validate_spec,
)

_DRIVE_FIELDS = {"name", "type", "model", "rpm", "capacity", "heads", "outer_mb_s", "inner_mb_s", "overhead_ms",
                 "seek_read", "seek_write", "short_seek_fraction", "queue_depth", "scheduler", "starvation_ms",
                 "write_cache", "write_cache_bytes", "readahead", "interface_mb_s", "sources"}
_SSD_FIELDS = {"name", "type", "model", "capacity", "read_us", "write_us", "read_mb_s", "write_mb_s", "channels",
               "sources"}
_OVERRIDABLE = {"queue_depth", "scheduler", "starvation_ms", "write_cache", "write_cache_bytes", "readahead_bytes",
                "short_seek_fraction", "overhead_ms"}


def _yaml(path: Path) -> Any:
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover
        raise MissingTool("python3-yaml", "pyyaml (run 'make setup')") from exc
    if not path.is_file():
        raise ConfigError(str(path), "(file)", "no such file")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), "(syntax)", f"not valid YAML: {exc}") from exc


def _get(raw: dict, source: str, key: str, where: str = "") -> Any:
    if key not in raw:
        raise ConfigError(source, f"{where}{key}", "missing")
    return raw[key]


def _seconds(value: Any, source: str, field: str) -> float:
    """120, '120s', '2m', '24h' -> seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    for suffix, mult in (("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(suffix):
            try:
                return float(text[: -len(suffix)]) * mult
            except ValueError:
                break
    raise ConfigError(source, field, f"not a duration: {value!r} (use e.g. 120s, 2m, 24h)")


def parse_profile(raw: Any, source: str) -> Profile:
    if not isinstance(raw, dict):
        raise ConfigError(source, "(top level)", "expected a mapping")
    kind = _get(raw, source, "type")
    sources = raw.get("sources")
    if kind != "zero" and (not isinstance(sources, list) or not sources):
        raise ConfigError(source, "sources", "a profile must cite its datasheet sources (a non-empty list)")
    cite = " | ".join(str(s) for s in sources or [])
    p: Profile
    if kind == "drive":
        unknown = set(raw) - _DRIVE_FIELDS
        if unknown:
            raise ConfigError(source, sorted(unknown)[0], "unknown field")
        seeks = {}
        for name in ("seek_read", "seek_write"):
            s = _get(raw, source, name)
            if not isinstance(s, dict):
                raise ConfigError(source, name, "expected {track_to_track_ms, average_ms, full_stroke_ms}")
            try:
                seeks[name] = SeekSpec(**{k: s[k] for k in ("track_to_track_ms", "average_ms", "full_stroke_ms")})
            except KeyError as exc:
                raise ConfigError(source, f"{name}.{exc.args[0]}", "missing") from exc
        p = DriveProfile(
            name=_get(raw, source, "name"), rpm=_get(raw, source, "rpm"),
            capacity_bytes=parse_size(_get(raw, source, "capacity"), source=source, field_name="capacity"),
            heads=_get(raw, source, "heads"), outer_mb_s=_get(raw, source, "outer_mb_s"),
            inner_mb_s=_get(raw, source, "inner_mb_s"), overhead_ms=_get(raw, source, "overhead_ms"),
            seek_read=seeks["seek_read"], seek_write=seeks["seek_write"],
            short_seek_fraction=raw.get("short_seek_fraction", 0.2), queue_depth=raw.get("queue_depth", 32),
            scheduler=raw.get("scheduler", "sptf"), starvation_ms=raw.get("starvation_ms", 1000.0),
            write_cache=raw.get("write_cache", False),
            write_cache_bytes=parse_size(raw.get("write_cache_bytes", 4 << 20), source=source,
                                         field_name="write_cache_bytes"),
            readahead_bytes=parse_size(raw.get("readahead", 512 << 10), source=source, field_name="readahead"),
            interface_mb_s=raw.get("interface_mb_s", 600.0), source=cite)
        if not isinstance(p.write_cache, bool):
            raise ConfigError(source, "write_cache", "expected true or false")
    elif kind == "ssd":
        unknown = set(raw) - _SSD_FIELDS
        if unknown:
            raise ConfigError(source, sorted(unknown)[0], "unknown field")
        p = SsdProfile(name=_get(raw, source, "name"),
                       capacity_bytes=parse_size(_get(raw, source, "capacity"), source=source, field_name="capacity"),
                       read_us=_get(raw, source, "read_us"), write_us=_get(raw, source, "write_us"),
                       read_mb_s=_get(raw, source, "read_mb_s"), write_mb_s=_get(raw, source, "write_mb_s"),
                       channels=raw.get("channels", 8), source=cite)
    elif kind == "zero":
        p = ZeroProfile(name=str(raw.get("name", "zero")))
    else:
        raise ConfigError(source, "type", f"{kind!r} is not one of drive, ssd, zero")
    validate_profile(p, source)
    return p


def load_profile(name: str, directory: Path | None = None) -> Profile:
    """rigs/spindles/NAME.yaml."""
    path = (directory or SPINDLES_DIR) / f"{name}.yaml"
    if not path.is_file():
        avail = sorted(q.stem for q in (directory or SPINDLES_DIR).glob("*.yaml") if q.stem != "devices")
        raise ConfigError(str(path), "profile", f"no drive profile {name!r} (have: {', '.join(avail)})")
    return parse_profile(_yaml(path), str(path))


def profile_names(directory: Path | None = None) -> list[str]:
    return sorted(q.stem for q in (directory or SPINDLES_DIR).glob("*.yaml") if q.stem != "devices")


def named_devices(directory: Path | None = None) -> dict[str, Any]:
    raw = _yaml((directory or SPINDLES_DIR) / "devices.yaml")
    if not isinstance(raw, dict):
        raise ConfigError(str((directory or SPINDLES_DIR) / "devices.yaml"), "(top level)", "expected a mapping")
    return raw


def parse_device(raw: Any, source: str, where: str = "spindle", directory: Path | None = None) -> DeviceSpec:
    """The rig's `spindle:` mapping (or a devices.yaml entry) -> a validated DeviceSpec."""
    if not isinstance(raw, dict):
        raise ConfigError(source, where, "expected a mapping")
    if "device" in raw:
        if set(raw) != {"device"}:
            raise ConfigError(source, f"{where}.{sorted(set(raw) - {'device'})[0]}",
                              "a named device takes no other fields")
        devices = named_devices(directory)
        name = raw["device"]
        if name not in devices:
            raise ConfigError(source, f"{where}.device", f"no device {name!r} in rigs/spindles/devices.yaml "
                              f"(have: {', '.join(sorted(devices))})")
        dev_source = str((directory or SPINDLES_DIR) / "devices.yaml")
        return parse_device(devices[name], dev_source, name, directory)
    kind = _get(raw, source, "kind", f"{where}.")
    allowed = {"disk": {"kind", "profile", "overrides", "cache"},
               "raid1": {"kind", "profile", "overrides", "cache"},
               "raid5": {"kind", "profile", "overrides", "members", "stripe_unit", "cache"},
               "tier": {"kind", "ssd", "hdd", "extent", "ssd_fraction", "cycle", "window_cycles", "heat_max_io",
                        "migration_mb_s", "max_migrations_per_cycle", "migration_chunk", "new_allocation",
                        "cache"}}
    if kind not in allowed:
        raise ConfigError(source, f"{where}.kind", f"{kind!r} is not one of {', '.join(allowed)}")
    unknown = set(raw) - allowed[kind]
    if unknown:
        raise ConfigError(source, f"{where}.{sorted(unknown)[0]}", f"unknown field for kind {kind}")
    if kind == "tier":
        spec: DeviceSpec = TierSpec(
            ssd=parse_device(_get(raw, source, "ssd", f"{where}."), source, f"{where}.ssd", directory),
            hdd=parse_device(_get(raw, source, "hdd", f"{where}."), source, f"{where}.hdd", directory),
            extent_bytes=parse_size(raw.get("extent", 16 << 20), source=source, field_name=f"{where}.extent"),
            ssd_fraction=raw.get("ssd_fraction", TierSpec.ssd_fraction),
            cycle_s=_seconds(raw.get("cycle", TierSpec.cycle_s), source, f"{where}.cycle"),
            window_cycles=raw.get("window_cycles", TierSpec.window_cycles),
            heat_max_io_bytes=parse_size(raw.get("heat_max_io", TierSpec.heat_max_io_bytes), source=source,
                                         field_name=f"{where}.heat_max_io"),
            migration_mb_s=raw.get("migration_mb_s", TierSpec.migration_mb_s),
            max_migrations_per_cycle=raw.get("max_migrations_per_cycle", TierSpec.max_migrations_per_cycle),
            migration_chunk_bytes=parse_size(raw.get("migration_chunk", 1 << 20), source=source,
                                             field_name=f"{where}.migration_chunk"),
            new_allocation=raw.get("new_allocation", "hdd"))
    else:
        profile = load_profile(str(_get(raw, source, "profile", f"{where}.")), directory)
        overrides = raw.get("overrides", {}) or {}
        if overrides:
            if not isinstance(profile, DriveProfile):
                raise ConfigError(source, f"{where}.overrides", "only drive profiles take overrides")
            bad = set(overrides) - _OVERRIDABLE
            if bad:
                raise ConfigError(source, f"{where}.overrides.{sorted(bad)[0]}",
                                  f"not overridable (allowed: {', '.join(sorted(_OVERRIDABLE))})")
            profile = dataclasses.replace(profile, **overrides)
            validate_profile(profile, f"{source} ({where}.overrides)")
        member = DiskSpec(profile=profile)
        if kind == "disk":
            spec = member
        elif kind == "raid1":
            spec = Raid1Spec(members=(member, member))
        else:
            n = _get(raw, source, "members", f"{where}.")
            if isinstance(n, bool) or not isinstance(n, int):
                raise ConfigError(source, f"{where}.members", f"expected a member count, got {n!r}")
            spec = Raid5Spec(members=tuple([member] * n),
                             stripe_unit_bytes=parse_size(raw.get("stripe_unit", 64 << 10), source=source,
                                                          field_name=f"{where}.stripe_unit"))
    if "cache" in raw:
        if isinstance(spec, ControllerSpec):  # pragma: no cover - parse_device builds none above
            raise ConfigError(source, f"{where}.cache", "one controller cache per device")
        spec = ControllerSpec(array=spec, cache=parse_cache(raw["cache"], source, f"{where}.cache"))
    validate_spec(spec, source, where)
    return spec


_CACHE_FIELDS = {"size", "battery_backed", "write_back_unprotected", "destage", "high_watermark", "low_watermark",
                 "destage_depth", "overhead_us", "link_mb_s", "segment"}


def parse_cache(raw: Any, source: str, where: str) -> CacheSpec:
    """A device's `cache:` mapping (an array controller's write cache, see ctrlcache.py) -> a CacheSpec."""
    if not isinstance(raw, dict):
        raise ConfigError(source, where, "expected a mapping (size, battery_backed, destage, ...)")
    unknown = set(raw) - _CACHE_FIELDS
    if unknown:
        raise ConfigError(source, f"{where}.{sorted(unknown)[0]}",
                          f"unknown cache field (allowed: {', '.join(sorted(_CACHE_FIELDS))})")
    d = CacheSpec(size_bytes=0, battery_backed=False)
    cache = CacheSpec(
        size_bytes=parse_size(_get(raw, source, "size", f"{where}."), source=source, field_name=f"{where}.size"),
        battery_backed=_get(raw, source, "battery_backed", f"{where}."),
        write_back_unprotected=raw.get("write_back_unprotected", d.write_back_unprotected),
        destage=raw.get("destage", d.destage),
        high_watermark=raw.get("high_watermark", d.high_watermark),
        low_watermark=raw.get("low_watermark", d.low_watermark),
        destage_depth=raw.get("destage_depth", d.destage_depth),
        overhead_us=raw.get("overhead_us", d.overhead_us),
        link_mb_s=raw.get("link_mb_s", d.link_mb_s),
        segment_bytes=parse_size(raw.get("segment", d.segment_bytes), source=source, field_name=f"{where}.segment"))
    validate_cache(cache, source, where)
    return cache


def disk(profile_name: str) -> DiskSpec:
    """A single drive of a named profile (convenience for studies and tests)."""
    return DiskSpec(profile=load_profile(profile_name))
