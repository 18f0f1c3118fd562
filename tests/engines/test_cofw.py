"""The cofw engine through the SnapshotEngine interface (same as qcow2): start, fio, snapshots, counters, delete."""
from __future__ import annotations

import pytest

from snaptax import counters, fio
from snaptax.cofw.validate import fetch
from snaptax.engines.base import SnapshotEngine
from snaptax.engines.cofw import CofwEngine, CofwEngineConfig
from snaptax.errors import ConfigError, EngineError
from snaptax.rig import Device

MiB = 1 << 20


@pytest.fixture
def rig(scratch_rig):
    return scratch_rig("cofw", 256 * MiB)


def test_config_validation(rig):
    with pytest.raises(ConfigError, match="threads"):
        CofwEngineConfig(threads=0)
    with pytest.raises(ConfigError, match="durability"):
        CofwEngineConfig(durability="fast")
    with pytest.raises(ConfigError, match="page_size"):
        CofwEngineConfig(page_size=2048)                    # direct=True needs 4 KiB multiples
    with pytest.raises(ConfigError, match="capacity"):
        CofwEngine(rig, rig.device(), CofwEngineConfig(), disk_size=1 << 40)
    with pytest.raises(ConfigError, match="page_size"):
        CofwEngine(rig, rig.device(), CofwEngineConfig(page_size=65536), disk_size=65536 * 3 + 8192)
    spindle = Device(name="hdd", type="spindle", medium="hdd", capacity=256 * MiB)
    with pytest.raises(ConfigError, match="file or block"):
        CofwEngine(rig, spindle, CofwEngineConfig(), disk_size=64 * MiB)


@pytest.mark.integration
def test_engine_lifecycle(rig):
    engine = CofwEngine(rig, rig.device(), CofwEngineConfig(page_size=8192), disk_size=64 * MiB)
    assert isinstance(engine, SnapshotEngine)
    job = fio.FioJob(name="w", rw="randwrite", bs=4096, iodepth=16, size=16 * MiB, runtime_s=1,
                     log_avg_msec=None)
    with engine:
        children = list(engine.group.children)
        target = engine.fio_target()
        assert target.ioengine == "nbd" and "live" in target.uri
        fio.run(job, target, rig.work_dir / "m0")
        before = engine.counters()
        assert before["engine.pages_copied"] == 0 and before["engine.snapshot_allocated_bytes"] == 0
        for name in before:                                   # every name is in the counter catalogue
            counters.spec(name)
        assert not any("page_size" in name for name in before)  # a constant: in describe(), not a counter
        assert engine.take_snapshot() == "snap1" and engine.chain_length == 1
        view1 = fetch(engine.snapshot_uri("snap1"), rig.work_dir / "v1.out")
        fio.run(job, target, rig.work_dir / "m1")
        after = engine.counters()
        copied = after["engine.pages_copied"] - before["engine.pages_copied"]
        assert copied > 0 and after["engine.bytes_copied"] == copied * 8192
        assert after["engine.metadata_ops"] > before["engine.metadata_ops"]
        # the snapshot's sparse file holds the copied pages (and no more than a few blocks of file-system metadata)
        assert copied * 8192 <= after["engine.snapshot_allocated_bytes"] <= copied * 8192 + (1 << 20)
        assert fetch(engine.snapshot_uri("snap1"), rig.work_dir / "v1b.out") == view1
        engine.take_snapshot()
        assert engine.delete_snapshot("oldest") == "snap1"
        assert engine.delete_snapshot("newest") == "snap2" and engine.chain_length == 0
        with pytest.raises(EngineError, match="no snapshot"):
            engine.delete_snapshot()
        assert engine.counters()["engine.snapshot_allocated_bytes"] == 0   # deleting discards the sparse files
        d = engine.describe()
        assert d["engine"] == "cofw" and d["config"]["page_size"] == d["page_size"] == 8192
        run_dir = rig.rig_work_dir / "run" / "cofw-cofw8k"
        assert run_dir.exists()
    for child in children:
        assert child.proc.poll() is not None
    assert not run_dir.exists(), "the engine must remove its files"


def test_counter_names_are_in_the_catalogue():
    from dataclasses import fields

    from snaptax.cofw.core import Counters
    from snaptax.engines.cofw import ENGINE_COUNTERS

    assert set(ENGINE_COUNTERS) == {f.name for f in fields(Counters)}    # every counter the plugin keeps
    for name in (*ENGINE_COUNTERS, "snapshot_allocated_bytes"):
        counters.spec(f"engine.{name}")
    assert counters.kind("engine.snapshot_allocated_bytes") == "gauge"
    assert counters.kind("engine.pages_copied") == "counter"
