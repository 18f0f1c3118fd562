"""LVM thin's configuration: one thin pool (LvmThinConfig), and the names its volume group and volumes
have in the script."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ...errors import ConfigError
from ...guest.vm import GuestConfig

VG = "snaptax"
POOL = "pool"
ORIGIN = "origin"
CONTROL = "control"
MiB = 1 << 20
EXTENT = 4 * MiB  # VG extent size (lvm's default); pool and PV sizes are rounded to it


@dataclass(frozen=True)
class LvmThinConfig:
    """One thin-pool configuration.

    chunk_size: pool chunk (allocation and sharing unit), 64 KiB … 1 GiB, a multiple of 64 KiB.
    zeroing: zero a newly provisioned chunk before a partial write to it (`lvcreate -Z y`); sharing breaks copy
             the old chunk regardless.
    pool_factor: pool data size ÷ thin volume size, at least 2: a full copy-out of the origin after a snapshot
             must fit, or the pool fills and I/O stalls (platform notes).
    chain: 'fan' (snapshots of the origin, fio on the origin) or 'stack' (snapshot-of-snapshot, fio on the newest).
    mode: 'auto' (native if the host has device-mapper, else the TCG guest), 'guest' or 'native'.
    integrity: keep a byte copy of every volume (guest RAM); after every step compare each volume with it by MD5,
             after deletes and at the end byte for byte (cmp).
    control_volume: also create a flat (linear, never snapshotted) LV "control" of the thin volume's size beside the
             pool, on the same PV, for the plan's Measure(target="flat"): the same job on the guest's raw disk,
             so the guest's own overhead is measured beside the thin volume's.
    """

    name: str = "lvmthin"
    chunk_size: int = 64 << 10
    zeroing: bool = False
    pool_factor: float = 2.0
    metadata_size: int | None = None
    chain: Literal["fan", "stack"] = "fan"
    mode: Literal["auto", "guest", "native"] = "auto"
    integrity: bool = False
    control_volume: bool = False
    guest: GuestConfig = field(default_factory=GuestConfig)
    analogue: str = ""

    def __post_init__(self) -> None:
        src = f"lvmthin config {self.name!r}"
        cs = self.chunk_size
        if cs < (64 << 10) or cs > (1 << 30) or cs % (64 << 10):
            raise ConfigError(src, "chunk_size", f"{cs} is not a multiple of 64 KiB in 64 KiB…1 GiB")
        if self.pool_factor < 2:
            raise ConfigError(src, "pool_factor", f"{self.pool_factor} < 2: a full copy-out would fill the pool")
        if self.chain not in ("fan", "stack"):
            raise ConfigError(src, "chain", f"{self.chain!r} is not 'fan' or 'stack'")
        if self.mode not in ("auto", "guest", "native"):
            raise ConfigError(src, "mode", f"{self.mode!r} is not 'auto', 'guest' or 'native'")
        if self.metadata_size is not None and not (2 * MiB <= self.metadata_size <= 16 << 30):
            raise ConfigError(src, "metadata_size", "must lie in 2 MiB…16 GiB")


def round_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit
