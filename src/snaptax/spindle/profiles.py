"""Typed drive profiles and device specs (stdlib only; also loaded inside the nbdkit plugin).

Units in field names: `_ms` milliseconds, `_us` microseconds, `_mb_s` 10^6 bytes per second (datasheet
megabytes), `_bytes` bytes, `_s` seconds. A spec is turned into plain JSON (to_json) to cross into the
plugin, and back (spec_from_json) with the same validation, so a bad value always fails with one
ConfigError naming the field.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ConfigError

SCHEDULERS = ("sptf", "clook", "fifo")


@dataclass(frozen=True)
class SeekSpec:
    """Datasheet seek figures *without* controller overhead, settling included (ms).

    `average_ms` is the datasheet's "weighted average of all possible seek combinations": seek length n
    weighted by (max + 1 - n), i.e. the mean over two uniformly random cylinders (pdf 2(1-u) of the
    stroke fraction u)."""

    track_to_track_ms: float
    average_ms: float
    full_stroke_ms: float


@dataclass(frozen=True)
class DriveProfile:
    """A mechanical drive as its product manual describes it (full, unscaled capacity).

    Geometry: `heads` surfaces, `rpm`; sustained media rate falls linearly with stroke position from
    `outer_mb_s` (outer diameter) to `inner_mb_s`. Cylinders are derived, not given:
        cylinders = capacity / (heads · mean_rate · T_rev),  mean_rate = (outer + inner)/2, T_rev = 60/rpm
    (bytes a surface track holds = rate · T_rev), which the tests check against the datasheet's
    tracks-per-surface where one is cited."""

    name: str
    rpm: float
    capacity_bytes: int
    heads: int
    outer_mb_s: float
    inner_mb_s: float
    overhead_ms: float
    seek_read: SeekSpec
    seek_write: SeekSpec
    short_seek_fraction: float = 0.2   # Ruemmler–Wilkes boundary between √d and linear pieces (of stroke)
    queue_depth: int = 32              # NCQ / TCQ reorder window
    scheduler: str = "sptf"
    starvation_ms: float = 1000.0      # a command older than this is served next regardless of position
    write_cache: bool = False
    write_cache_bytes: int = 4 << 20
    readahead_bytes: int = 512 << 10
    interface_mb_s: float = 600.0      # host link (6 Gb/s SAS ≈ 600 MB/s): cache hits transfer at this rate
    source: str = ""

    @property
    def t_rev_s(self) -> float:
        return 60.0 / self.rpm

    @property
    def mean_rate_bytes_s(self) -> float:
        return (self.outer_mb_s + self.inner_mb_s) / 2 * 1e6

    @property
    def cylinders(self) -> float:
        return self.capacity_bytes / (self.heads * self.mean_rate_bytes_s * self.t_rev_s)


@dataclass(frozen=True)
class SsdProfile:
    """A flash member for the tier: fixed latency per command + transfer, `channels` commands in parallel."""

    name: str
    capacity_bytes: int
    read_us: float
    write_us: float
    read_mb_s: float
    write_mb_s: float
    channels: int = 8
    source: str = ""


@dataclass(frozen=True)
class ZeroProfile:
    """Completes every command at the instant it arrives: measures the emulator's own cost."""

    name: str = "zero"
    source: str = "none: a zero-latency device for overhead measurement"


Profile = DriveProfile | SsdProfile | ZeroProfile


@dataclass(frozen=True)
class DiskSpec:
    """One member device."""

    profile: Profile
    kind: Literal["disk"] = "disk"


@dataclass(frozen=True)
class Raid1Spec:
    members: tuple[DiskSpec, DiskSpec]
    kind: Literal["raid1"] = "raid1"


@dataclass(frozen=True)
class Raid5Spec:
    """N members, left-symmetric parity rotation, `stripe_unit_bytes` per member per stripe row."""

    members: tuple[DiskSpec, ...]
    stripe_unit_bytes: int = 64 << 10
    kind: Literal["raid5"] = "raid5"


@dataclass(frozen=True)
class TierSpec:
    """An SSD + HDD pool of `extent_bytes` extents: IBM Easy Tier's model, time and capacity scaled.

    `ssd_fraction` (0 < f < 1) of the pool's logical capacity lives on the SSD tier. Every `cycle_s` seconds the
    pool ranks extents by heat, promotes hot HDD extents and demotes cold SSD ones, copying
    `migration_chunk_bytes` at a time through the members. New extents are allocated on `new_allocation`
    (Easy Tier: the enterprise/HDD tier). How each part follows IBM's documentation, and what is scaled:

    Heat. Easy Tier samples per-extent I/O every 5 minutes and plans from the average over a rolling 24 h, the
    cycle of the seed's era. Here heat is the count of host I/Os to the extent over the last `window_cycles`
    cycles (1 = the rolling window equals the cycle, as IBM's). The 5-minute sampling is not emulated: the plan
    is made at cycle ends only, when the window holds exactly 288 whole samples, and the mean of those samples
    is their sum / 288, so the ranking (the placement decision) is the same as ranking by the count. Scaled
    (1 : 288), the sampling interval of a 120 s cycle would be 120 / 288 ≈ 0.42 s.

    Only host I/Os of at most `heat_max_io_bytes` (IBM: 64 KiB) count as heat: large sequential I/O does not
    make an extent a promotion candidate (it still reaches the members as usual).

    Migration rate. Easy Tier moves at most 12 GB per 5 minutes (40 MB/s; IBM docs, "Easy Tier acceleration
    mode", normal mode). Scaled by capacity and by time, for the seed's 4.2 TB pool emulated in 16 GiB with its
    24 h cycle emulated in 120 s:
        40e6 B/s × (16 GiB / 4.2e12 B) × (86400 s / 120 s) = 40e6 × 0.0040904 × 720 = 117.8e6 B/s
    so `migration_mb_s` = 117.8 (10^6 bytes per second): the pool can move the same share of its capacity per
    cycle as the real one (82 %), at 2.9× the real one's bytes per second of drive time (the members keep their
    full speed: only the LBA space and the cycle shrink). Moves are paced: an extent's copy starts no earlier
    than extent_bytes / rate after the previous one started. `max_migrations_per_cycle`, if set, caps the
    number of moves planned per cycle as well (None: only the rate limits)."""

    ssd: DeviceSpec
    hdd: DeviceSpec
    extent_bytes: int = 16 << 20
    ssd_fraction: float = 0.1
    cycle_s: float = 60.0
    window_cycles: int = 1
    heat_max_io_bytes: int = 64 << 10
    migration_mb_s: float = 117.8
    max_migrations_per_cycle: int | None = None
    migration_chunk_bytes: int = 1 << 20
    new_allocation: Literal["hdd", "ssd"] = "hdd"
    kind: Literal["tier"] = "tier"


DESTAGE_POLICIES = ("eager", "watermark")


@dataclass(frozen=True)
class CacheSpec:
    """An array controller's write cache (see ctrlcache.py for what the emulator does with each field).

    `size_bytes` of cache for dirty data, managed in 4 KiB pages; `battery_backed`: the cache survives a power
    loss (battery, or dump to flash), so the controller acknowledges writes and flushes from it (write-back). An
    unprotected cache is write-through unless `write_back_unprotected` says the rig ran it write-back anyway
    (then a flush waits until everything dirty is on the members). `destage`: "eager" destages whenever dirty
    data exists; "watermark" starts when the cache is `high_watermark` full and stops at `low_watermark` (and
    destages whatever a waiting write or flush needs). At most `destage_depth` destage writes are outstanding.
    A write-back acknowledgement or a read served from the cache takes `overhead_us` plus the transfer at
    `link_mb_s`. `segment_bytes`: the destage unit of a non-RAID5 array (a RAID5's is its stripe row)."""

    size_bytes: int
    battery_backed: bool
    write_back_unprotected: bool = False
    destage: str = "eager"
    high_watermark: float = 0.5
    low_watermark: float = 0.25
    destage_depth: int = 8
    overhead_us: float = 50.0
    link_mb_s: float = 600.0
    segment_bytes: int = 1 << 20


@dataclass(frozen=True)
class ControllerSpec:
    """An array (or a single drive, or a pool) behind a controller with a write cache."""

    array: DiskSpec | Raid1Spec | Raid5Spec | TierSpec
    cache: CacheSpec
    kind: Literal["controller"] = "controller"


DeviceSpec = DiskSpec | Raid1Spec | Raid5Spec | TierSpec | ControllerSpec


# ------------------------------------------------------------------ validation

def _num(source: str, field: str, value: Any, *, minimum: float | None = None, positive: bool = False,
         integer: bool = False, maximum: float | None = None) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(source, field, f"expected a number, got {value!r}")
    if integer and int(value) != value:
        raise ConfigError(source, field, f"expected an integer, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(source, field, f"must be positive, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(source, field, f"must be ≥ {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ConfigError(source, field, f"must be ≤ {maximum}, got {value!r}")
    return int(value) if integer else float(value)


def validate_profile(p: Profile, source: str) -> None:
    """Raise ConfigError (naming the field) for physically meaningless values."""
    if isinstance(p, DriveProfile):
        _num(source, "rpm", p.rpm, positive=True)
        _num(source, "capacity", p.capacity_bytes, positive=True, integer=True)
        _num(source, "heads", p.heads, positive=True, integer=True)
        _num(source, "outer_mb_s", p.outer_mb_s, positive=True)
        _num(source, "inner_mb_s", p.inner_mb_s, positive=True)
        if p.inner_mb_s > p.outer_mb_s:
            raise ConfigError(source, "inner_mb_s", "inner tracks cannot be faster than outer ones")
        _num(source, "overhead_ms", p.overhead_ms, minimum=0)
        for name in ("seek_read", "seek_write"):
            s = getattr(p, name)
            t1 = _num(source, f"{name}.track_to_track_ms", s.track_to_track_ms, positive=True)
            ta = _num(source, f"{name}.average_ms", s.average_ms, positive=True)
            tf = _num(source, f"{name}.full_stroke_ms", s.full_stroke_ms, positive=True)
            if not t1 < ta < tf:
                raise ConfigError(source, name, f"need track_to_track < average < full_stroke, got {t1}, {ta}, {tf}")
        _num(source, "short_seek_fraction", p.short_seek_fraction, positive=True, maximum=1 / 3)
        _num(source, "queue_depth", p.queue_depth, positive=True, integer=True, maximum=256)
        if p.scheduler not in SCHEDULERS:
            raise ConfigError(source, "scheduler", f"{p.scheduler!r} is not one of {', '.join(SCHEDULERS)}")
        _num(source, "starvation_ms", p.starvation_ms, positive=True)
        _num(source, "write_cache_bytes", p.write_cache_bytes, minimum=0, integer=True)
        _num(source, "readahead_bytes", p.readahead_bytes, minimum=0, integer=True)
        _num(source, "interface_mb_s", p.interface_mb_s, positive=True)
    elif isinstance(p, SsdProfile):
        _num(source, "capacity", p.capacity_bytes, positive=True, integer=True)
        for f in ("read_us", "write_us"):
            _num(source, f, getattr(p, f), minimum=0)
        for f in ("read_mb_s", "write_mb_s"):
            _num(source, f, getattr(p, f), positive=True)
        _num(source, "channels", p.channels, positive=True, integer=True)


def validate_spec(spec: DeviceSpec, source: str, where: str = "spindle") -> None:
    if isinstance(spec, DiskSpec):
        validate_profile(spec.profile, f"{source} ({where}: profile {spec.profile.name})")
    elif isinstance(spec, Raid1Spec):
        if len(spec.members) != 2:
            raise ConfigError(source, f"{where}.members", f"RAID1 takes exactly 2 members, got {len(spec.members)}")
        for i, m in enumerate(spec.members):
            validate_spec(m, source, f"{where}.members[{i}]")
    elif isinstance(spec, Raid5Spec):
        if len(spec.members) < 3:
            raise ConfigError(source, f"{where}.members", f"RAID5 needs at least 3 members, got {len(spec.members)}")
        _num(source, f"{where}.stripe_unit", spec.stripe_unit_bytes, positive=True, integer=True)
        if spec.stripe_unit_bytes % 512:
            raise ConfigError(source, f"{where}.stripe_unit", "must be a multiple of 512 bytes")
        for i, m in enumerate(spec.members):
            validate_spec(m, source, f"{where}.members[{i}]")
    elif isinstance(spec, TierSpec):
        _num(source, f"{where}.extent", spec.extent_bytes, positive=True, integer=True)
        fraction = _num(source, f"{where}.ssd_fraction", spec.ssd_fraction, positive=True)
        if fraction >= 1:   # an all-SSD pool has nothing to tier: the study would measure no placement at all
            raise ConfigError(source, f"{where}.ssd_fraction", f"must be between 0 and 1 (exclusive), got {fraction!r}")
        _num(source, f"{where}.cycle", spec.cycle_s, positive=True)
        _num(source, f"{where}.window_cycles", spec.window_cycles, positive=True, integer=True)
        _num(source, f"{where}.heat_max_io", spec.heat_max_io_bytes, positive=True, integer=True)
        _num(source, f"{where}.migration_mb_s", spec.migration_mb_s, positive=True)
        if spec.max_migrations_per_cycle is not None:
            _num(source, f"{where}.max_migrations_per_cycle", spec.max_migrations_per_cycle, minimum=0,
                 integer=True)
        _num(source, f"{where}.migration_chunk", spec.migration_chunk_bytes, positive=True, integer=True)
        if spec.extent_bytes % spec.migration_chunk_bytes:
            raise ConfigError(source, f"{where}.migration_chunk", "must divide the extent size")
        if spec.new_allocation not in ("hdd", "ssd"):
            raise ConfigError(source, f"{where}.new_allocation", f"{spec.new_allocation!r} is not 'hdd' or 'ssd'")
        validate_spec(spec.ssd, source, f"{where}.ssd")
        validate_spec(spec.hdd, source, f"{where}.hdd")
    elif isinstance(spec, ControllerSpec):
        validate_cache(spec.cache, source, f"{where}.cache")
        if isinstance(spec.array, Raid5Spec) and spec.array.stripe_unit_bytes % 4096:
            raise ConfigError(source, f"{where}.stripe_unit", "behind a controller cache: a multiple of 4 KiB")
        validate_spec(spec.array, source, where)
    else:  # pragma: no cover - typed callers cannot get here
        raise ConfigError(source, where, f"not a device spec: {spec!r}")


def validate_cache(c: CacheSpec, source: str, where: str) -> None:
    _num(source, f"{where}.size", c.size_bytes, minimum=4096, integer=True)
    for name in ("battery_backed", "write_back_unprotected"):
        if not isinstance(getattr(c, name), bool):
            raise ConfigError(source, f"{where}.{name}", f"expected true or false, got {getattr(c, name)!r}")
    if c.destage not in DESTAGE_POLICIES:
        raise ConfigError(source, f"{where}.destage", f"{c.destage!r} is not one of {', '.join(DESTAGE_POLICIES)}")
    low = _num(source, f"{where}.low_watermark", c.low_watermark, minimum=0, maximum=1)
    high = _num(source, f"{where}.high_watermark", c.high_watermark, minimum=0, maximum=1)
    if low > high:
        raise ConfigError(source, f"{where}.low_watermark", f"must not exceed high_watermark ({high})")
    _num(source, f"{where}.destage_depth", c.destage_depth, positive=True, integer=True)
    _num(source, f"{where}.overhead_us", c.overhead_us, positive=True)
    _num(source, f"{where}.link_mb_s", c.link_mb_s, positive=True)
    _num(source, f"{where}.segment", c.segment_bytes, positive=True, integer=True)
    if c.segment_bytes % 4096:
        raise ConfigError(source, f"{where}.segment", "must be a multiple of 4 KiB (the cache's page)")


# ------------------------------------------------------------------ JSON round trip (into the plugin)

def to_json(spec: DeviceSpec) -> dict:
    """Plain JSON-able dict; profiles carry a `type` tag."""
    def conv(obj: Any) -> Any:
        if dataclasses.is_dataclass(obj):
            d = {f.name: conv(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
            if isinstance(obj, (DriveProfile, SsdProfile, ZeroProfile)):
                d["type"] = type(obj).__name__
            return d
        if isinstance(obj, tuple):
            return [conv(x) for x in obj]
        return obj
    return conv(spec)


def _profile_from_json(d: dict, source: str) -> Profile:
    kind = d.get("type")
    body = {k: v for k, v in d.items() if k != "type"}
    try:
        if kind == "DriveProfile":
            body["seek_read"] = SeekSpec(**body["seek_read"])
            body["seek_write"] = SeekSpec(**body["seek_write"])
            return DriveProfile(**body)
        if kind == "SsdProfile":
            return SsdProfile(**body)
        if kind == "ZeroProfile":
            return ZeroProfile(**body)
    except (TypeError, KeyError) as exc:
        raise ConfigError(source, f"profile {d.get('name')!r}", str(exc)) from exc
    raise ConfigError(source, "profile.type", f"unknown profile type {kind!r}")


def spec_from_json(d: dict, source: str = "spindle spec") -> DeviceSpec:
    kind = d.get("kind")
    if kind == "disk":
        spec: DeviceSpec = DiskSpec(profile=_profile_from_json(d["profile"], source))
    elif kind == "raid1":
        # members are disks: the JSON is to_json of a typed spec (a raid's members are DiskSpecs)
        spec = Raid1Spec(members=tuple(spec_from_json(m, source) for m in d["members"]))  # type: ignore[arg-type]
    elif kind == "raid5":
        spec = Raid5Spec(members=tuple(spec_from_json(m, source) for m in d["members"]),  # type: ignore[misc]  # as above
                         stripe_unit_bytes=d["stripe_unit_bytes"])
    elif kind == "tier":
        body = {k: v for k, v in d.items() if k not in ("ssd", "hdd", "kind")}
        spec = TierSpec(ssd=spec_from_json(d["ssd"], source), hdd=spec_from_json(d["hdd"], source), **body)
    elif kind == "controller":
        try:
            cache = CacheSpec(**d["cache"])
        except (TypeError, KeyError) as exc:
            raise ConfigError(source, "cache", str(exc)) from exc
        spec = ControllerSpec(array=spec_from_json(d["array"], source), cache=cache)  # type: ignore[arg-type]
    else:
        raise ConfigError(source, "kind", f"{kind!r} is not one of disk, raid1, raid5, tier, controller")
    validate_spec(spec, source)
    return spec


def describe(spec: DeviceSpec) -> str:
    """Short human label: 'sas10k', 'raid1(sas10k×2)', 'raid5(sas15k×6, 64 KiB)', 'tier(ssd | raid5(...))'."""
    if isinstance(spec, DiskSpec):
        return spec.profile.name
    if isinstance(spec, Raid1Spec):
        return f"raid1({describe(spec.members[0])}×2)"
    if isinstance(spec, Raid5Spec):
        return f"raid5({describe(spec.members[0])}×{len(spec.members)}, {spec.stripe_unit_bytes >> 10} KiB)"
    if isinstance(spec, ControllerSpec):
        c = spec.cache
        mode = "write-back" if c.battery_backed or c.write_back_unprotected else "write-through"
        return f"{describe(spec.array)} + cache({c.size_bytes >> 20} MiB, {mode}, {c.destage})"
    return f"tier({describe(spec.ssd)} | {describe(spec.hdd)})"
