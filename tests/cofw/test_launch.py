"""The nbdkit launcher's pieces that need no nbdkit: configuration and the snapshots' allocated space (which the
plugin reports from the core's counters_dict)."""
from __future__ import annotations

import os

import pytest

from snaptax.cofw.core import CofwConfig, CofwVolume
from snaptax.cofw.launch import PLUGIN, CofwEngineConfig
from snaptax.errors import ConfigError


def test_config_validation():
    assert CofwEngineConfig().core().page_size == 8192
    with pytest.raises(ConfigError, match="threads"):
        CofwEngineConfig(threads=0)
    with pytest.raises(ConfigError, match="page_size"):
        CofwEngineConfig(page_size=2048)                    # direct=True needs 4 KiB multiples
    assert PLUGIN.name == "nbdkit_plugin.py" and PLUGIN.exists()


def test_allocated_bytes_counts_the_snapshot_files_blocks(workdir):
    (workdir / "src.img").write_bytes(os.urandom(64 << 20))
    vol = CofwVolume(workdir / "src.img", CofwConfig(page_size=8192, durability="none"))
    allocated_bytes = lambda: vol.counters_dict()["snapshot_allocated_bytes"]  # noqa: E731
    assert allocated_bytes() == 0                           # no snapshots
    vol.create_snapshot("s1", workdir / "s1.snap")          # a sparse 64 MiB file with one 8 KiB page copied
    vol.write(b"y" * 8192, 1 << 20)
    vol.snapshot("s1").store.sync()
    (workdir / "s1.snap.unsafe").write_bytes(b"x" * 100000)   # not a snapshot file
    got = allocated_bytes()
    assert got == os.stat(workdir / "s1.snap").st_blocks * 512
    assert 8192 <= got < 1 << 20
    vol.close()
