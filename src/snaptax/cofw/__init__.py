"""Sparse-file copy-on-first-write snapshots (SQL Server database-snapshot semantics).

core            the bookkeeping (stdlib only: also imported by the nbdkit plugin under the system python3)
control         the line-JSON control protocol between the engine and the running nbdkit (stdlib only)
nbdkit_plugin   the nbdkit Python plugin serving the live volume and every snapshot view as NBD exports
launch          CofwServer: one nbdkit running the plugin, and its configuration (CofwEngineConfig)
bench           cofw_engine_over_raw(): the engine's own overhead against qemu-storage-daemon's raw export
"""
from .core import CofwConfig, CofwVolume, Counters, Snapshot

__all__ = ["CofwConfig", "CofwVolume", "Counters", "Snapshot"]
