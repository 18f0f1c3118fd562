"""The cofw engine through the SnapshotEngine interface (same as qcow2): start, fio, snapshots, counters, delete."""
from __future__ import annotations


import pytest

from snaptax import fio
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
        assert before["cofw_pages_copied"] == 0
        assert engine.take_snapshot() == "snap1" and engine.chain_length == 1
        view1 = fetch(engine.snapshot_uri("snap1"), rig.work_dir / "v1.out")
        fio.run(job, target, rig.work_dir / "m1")
        after = engine.counters()
        copied = after["cofw_pages_copied"] - before["cofw_pages_copied"]
        assert copied > 0 and after["cofw_bytes_copied"] == copied * 8192
        assert after["cofw_metadata_ops"] > before["cofw_metadata_ops"]
        assert fetch(engine.snapshot_uri("snap1"), rig.work_dir / "v1b.out") == view1
        engine.take_snapshot()
        assert engine.delete_snapshot("oldest") == "snap1"
        assert engine.delete_snapshot("newest") == "snap2" and engine.chain_length == 0
        with pytest.raises(EngineError, match="no snapshot"):
            engine.delete_snapshot()
        d = engine.describe()
        assert d["engine"] == "cofw" and d["config"]["page_size"] == 8192
        run_dir = rig.rig_work_dir / "run" / "cofw-cofw8k"
        assert run_dir.exists()
    for child in children:
        assert child.proc.poll() is not None
    assert not run_dir.exists(), "the engine must remove its files"
