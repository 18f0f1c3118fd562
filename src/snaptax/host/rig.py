"""Rig files: a typed, validated description of the storage a study runs on.

A rig names devices. Each device is one of
  * `file`    — a sparse image file in the rig's work directory (the embedded default; the host's own disk),
  * `block`   — a real block device, named by /dev/disk/by-id, used only if the rig is enabled and
                allows destruction (see snaptax.host.devices for the safety checks),
  * `spindle` — an emulated mechanical disk or array served over NBD (snaptax.spindle).
A file or block device may carry a `throttle` (rates of its own, snaptax.host.blkio): two file devices on the host's
one disk are then two devices of one class rather than two files sharing one disk's bandwidth.
Every problem is reported as ConfigError naming the file and the field.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import paths
from ..errors import ConfigError
from ..fio import parse_size
from .blkio import DeviceThrottle, parse_throttle

MEDIA = ("ssd", "hdd", "nvme", "tiered")
DEVICE_TYPES = ("file", "block", "spindle")
ENGINES = ("qcow2", "lvmthin", "cofw")
# Where a block device's name must live: udev's stable ids, which survive reboots and re-cabling (a /dev/sdX name
# does not). The one place this is decided; rig parsing and snaptax.host.devices both ask is_stable_id. There is no
# setting, environment variable or rig-file field that widens it. The attached-rig tests (tests/attached.py),
# on machines without udev, put their own links to loop devices in a private temporary directory and add that
# directory here for the duration of the test only, in their own process.
STABLE_ID_PREFIXES: tuple[str, ...] = ("/dev/disk/by-id/",)


def is_stable_id(path: str) -> bool:
    """True if `path` names a device by a stable id (a link under one of STABLE_ID_PREFIXES)."""
    return path.startswith(STABLE_ID_PREFIXES) and "/../" not in path


@dataclass(frozen=True)
class Device:
    name: str
    type: Literal["file", "block", "spindle"]
    medium: str
    capacity: int
    description: str = ""
    path: str | None = None                 # block: /dev/disk/by-id/...
    spindle: dict[str, Any] = field(default_factory=dict)  # validated by snaptax.spindle
    throttle: DeviceThrottle | None = None  # file, block: the device's own rates (snaptax.host.blkio)

    @property
    def emulated(self) -> bool:
        return self.type == "spindle"


@dataclass(frozen=True)
class Rig:
    name: str
    kind: Literal["embedded", "attached"]
    description: str
    devices: tuple[Device, ...]
    engines: tuple[str, ...]
    work_dir: Path
    enabled: bool = True
    allow_destroy: bool = False
    source: str = ""

    def device(self, name: str | None = None) -> Device:
        """A device by name; without a name, the first one (the rig's default device)."""
        if name is None:
            return self.devices[0]
        for dev in self.devices:
            if dev.name == name:
                return dev
        raise ConfigError(self.source, "devices", f"no device named {name!r} "
                          f"(have: {', '.join(d.name for d in self.devices)})")

    @property
    def rig_work_dir(self) -> Path:
        return self.work_dir / self.name


_RIG_FIELDS = {"name", "kind", "description", "devices", "engines", "work_dir", "enabled", "allow_destroy"}
_DEVICE_FIELDS = {"type", "medium", "capacity", "description", "path", "spindle", "throttle"}


def _expect(source: str, field_name: str, value: Any, types: type | tuple, what: str) -> Any:
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
        raise ConfigError(source, field_name, f"expected {what}, got {type(value).__name__} {value!r}")
    return value


def _as_tuple(t: type | tuple) -> tuple:
    return t if isinstance(t, tuple) else (t,)


def _parse_device(source: str, name: str, raw: Any) -> Device:
    where = f"devices.{name}"
    _expect(source, where, raw, dict, "a mapping")
    unknown = set(raw) - _DEVICE_FIELDS
    if unknown:
        raise ConfigError(source, f"{where}.{sorted(unknown)[0]}", "unknown field")
    for required in ("type", "medium", "capacity"):
        if required not in raw:
            raise ConfigError(source, f"{where}.{required}", "missing")
    dtype = raw["type"]
    if dtype not in DEVICE_TYPES:
        raise ConfigError(source, f"{where}.type", f"{dtype!r} is not one of {', '.join(DEVICE_TYPES)}")
    medium = raw["medium"]
    if medium not in MEDIA:
        raise ConfigError(source, f"{where}.medium", f"{medium!r} is not one of {', '.join(MEDIA)}")
    capacity = parse_size(raw["capacity"], source=source, field_name=f"{where}.capacity")
    path = raw.get("path")
    if dtype == "block":
        if not isinstance(path, str) or not path:
            raise ConfigError(source, f"{where}.path", "a block device needs a path")
        if not is_stable_id(path):
            raise ConfigError(source, f"{where}.path", f"{path!r} is not a stable id (use /dev/disk/by-id/...)")
    elif path is not None:
        raise ConfigError(source, f"{where}.path", f"only block devices take a path (this one is {dtype})")
    spindle = raw.get("spindle", {})
    if dtype == "spindle":
        _expect(source, f"{where}.spindle", spindle, dict, "a mapping")
        if not spindle:
            raise ConfigError(source, f"{where}.spindle", "an emulated spindle needs its model")
        if medium not in ("hdd", "tiered"):
            raise ConfigError(source, f"{where}.medium", f"an emulated spindle is 'hdd' or 'tiered', not {medium!r}")
        from ..spindle.rigfiles import parse_device as parse_spindle  # validates every field, naming it
        parse_spindle(spindle, source, f"{where}.spindle")
    elif spindle:
        raise ConfigError(source, f"{where}.spindle", "only spindle devices take a spindle model")
    throttle = None
    if "throttle" in raw:
        if dtype == "spindle":     # an emulated device keeps its own time: its model is its rate
            raise ConfigError(source, f"{where}.throttle", "only file and block devices take a throttle")
        throttle = parse_throttle(raw["throttle"], source, f"{where}.throttle")
    return Device(name=name, type=dtype, medium=medium, capacity=capacity,
                  description=str(raw.get("description", "")), path=path, spindle=dict(spindle),
                  throttle=throttle)


def parse_rig(raw: Any, source: str) -> Rig:
    _expect(source, "(top level)", raw, dict, "a mapping")
    unknown = set(raw) - _RIG_FIELDS
    if unknown:
        raise ConfigError(source, sorted(unknown)[0], "unknown field")
    for required in ("name", "kind", "devices"):
        if required not in raw:
            raise ConfigError(source, required, "missing")
    name = _expect(source, "name", raw["name"], str, "a string")
    kind = raw["kind"]
    if kind not in ("embedded", "attached"):
        raise ConfigError(source, "kind", f"{kind!r} is not 'embedded' or 'attached'")
    devices_raw = _expect(source, "devices", raw["devices"], dict, "a mapping of device name to device")
    if not devices_raw:
        raise ConfigError(source, "devices", "no devices")
    devices = tuple(_parse_device(source, str(n), d) for n, d in devices_raw.items())
    if kind == "embedded" and any(d.type == "block" for d in devices):
        raise ConfigError(source, "kind", "an embedded rig cannot name block devices (use kind: attached)")
    engines = tuple(_expect(source, "engines", raw.get("engines", ["qcow2"]), list, "a list"))
    for eng in engines:
        if eng not in ENGINES:
            raise ConfigError(source, "engines", f"{eng!r} is not one of {', '.join(ENGINES)}")
    enabled = _expect(source, "enabled", raw.get("enabled", True), bool, "true or false")
    allow_destroy = _expect(source, "allow_destroy", raw.get("allow_destroy", False), bool, "true or false")
    work_dir = paths.work_dir(_expect(source, "work_dir", raw.get("work_dir", str(paths.DEFAULT_WORK_DIR)),
                                      str, "a directory path"))
    return Rig(name=name, kind=kind, description=str(raw.get("description", "")), devices=devices,
               engines=engines, work_dir=work_dir, enabled=enabled, allow_destroy=allow_destroy,
               source=source)


def names() -> list[str]:
    """The rigs a name can give (rigs/NAME.yaml); any other rig file is given by its path."""
    return sorted(p.stem for p in paths.RIGS_DIR.glob("*.yaml"))


def load(name_or_path: str | Path) -> Rig:
    """Load and validate a rig file given by name (rigs/NAME.yaml) or path."""
    path = paths.rig_file(name_or_path)
    source = str(path)
    if path.is_dir():
        raise ConfigError(source, "(file)", "is a directory, not a rig file")
    if not path.is_file():
        raise ConfigError(source, "(file)", f"no such rig file (rigs: {', '.join(names())})")
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - the venv always has it
        from ..errors import MissingTool
        raise MissingTool("python3-yaml", "pyyaml (run 'make setup')") from exc
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "(syntax)"
        raise ConfigError(source, where, f"not valid YAML: {getattr(exc, 'problem', exc)}") from exc
    return parse_rig(raw, source)
