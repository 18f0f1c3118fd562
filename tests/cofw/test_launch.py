"""The nbdkit launcher's pieces that need no nbdkit: configuration and the snapshots' allocated space."""
from __future__ import annotations

import os

import pytest

from snaptax.cofw.launch import PLUGIN, CofwEngineConfig, allocated_bytes
from snaptax.errors import ConfigError


def test_config_validation():
    assert CofwEngineConfig().core().page_size == 8192
    with pytest.raises(ConfigError, match="threads"):
        CofwEngineConfig(threads=0)
    with pytest.raises(ConfigError, match="page_size"):
        CofwEngineConfig(page_size=2048)                    # direct=True needs 4 KiB multiples
    assert PLUGIN.name == "nbdkit_plugin.py" and PLUGIN.exists()


def test_allocated_bytes_counts_the_snapshot_files_blocks(workdir):
    snaps = workdir / "snaps"
    assert allocated_bytes(snaps) == 0                      # no directory yet: no snapshots
    snaps.mkdir()
    with open(snaps / "s1.snap", "wb") as f:                # a sparse 64 MiB file with one 8 KiB page copied
        f.truncate(64 << 20)
        f.seek(1 << 20)
        f.write(os.urandom(8192))
        f.flush()
        os.fsync(f.fileno())
    (snaps / "s1.snap.unsafe").write_bytes(b"x" * 100000)   # not a snapshot file
    got = allocated_bytes(snaps)
    assert got == os.stat(snaps / "s1.snap").st_blocks * 512
    assert 8192 <= got < 1 << 20
