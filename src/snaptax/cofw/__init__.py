"""Sparse-file copy-on-first-write snapshots (SQL Server database-snapshot semantics).

cofw.c          the engine: a C nbdkit plugin serving the live volume and every snapshot view as NBD exports
                (copy-on-first-write, sparse-file and snapshot-device stores, journals, crash recovery, counters)
build           compiles cofw.c into paths.COFW_PLUGIN (make setup; rebuilt when the source is newer)
spec            what Python and the plugin agree on: configuration checks, file suffixes, counter names
control         the line-JSON control protocol: the client (and a Python server, used only by tests)
launch          CofwServer: one nbdkit running the plugin, and its configuration (CofwEngineConfig)
validate        the engine against QEMU's copy-before-write
Its bench against qemu-storage-daemon's raw export is snaptax.bench.cofw.
"""
from .spec import COUNTERS, CofwConfig

__all__ = ["COUNTERS", "CofwConfig"]
