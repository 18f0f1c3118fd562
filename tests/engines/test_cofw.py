"""The cofw engine through the SnapshotEngine interface (same as qcow2): start, fio, snapshots, counters, delete."""
from __future__ import annotations

import pytest

from snaptax import counters, fio
from snaptax.cofw.validate import fetch
from snaptax.engines.base import SnapshotEngine
from snaptax.engines.cofw import CofwEngine, CofwEngineConfig
from snaptax.errors import ConfigError, EngineError
from snaptax.host.rig import Device

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

    from snaptax.cofw.spec import COUNTERS
    from snaptax.engines.cofw import ENGINE_COUNTERS

    assert set(ENGINE_COUNTERS) == set(COUNTERS)    # every counter the plugin keeps
    for name in (*ENGINE_COUNTERS, "snapshot_allocated_bytes"):
        counters.spec(f"engine.{name}")
    assert counters.kind("engine.snapshot_allocated_bytes") == "gauge"
    assert counters.kind("engine.pages_copied") == "counter"


def test_snapshot_device_must_differ_from_the_source(rig):
    with pytest.raises(ConfigError, match="snapshot_device"):
        CofwEngine(rig, rig.device(), CofwEngineConfig(), disk_size=64 * MiB, snapshot_device=rig.device())


@pytest.mark.integration
@pytest.mark.parametrize("snapshots", [1, 2])
def test_snapshots_on_an_emulated_15k_raid5_are_byte_exact(scratch_rig, snapshots):
    """The source on the SSD-class file, the snapshots' pages on an emulated six-disk 15K RAID5 over NBD (libnbd in
    the plugin): every view byte-exact after fio overwrote the volume, the array's own counters as snapdev.*, the
    copies' time counted per snapshot."""
    from dataclasses import replace

    base = scratch_rig("cofw", 128 * MiB)
    raid5 = Device(name="raid5", type="spindle", medium="hdd", capacity=256 * MiB,
                   spindle={"device": "raid5_15k_6"})
    rig = replace(base, devices=(*base.devices, raid5))
    engine = CofwEngine(rig, rig.device("ssd"), CofwEngineConfig(page_size=8192), disk_size=32 * MiB,
                        snapshot_device=raid5)
    fill = fio.FioJob(name="fill", rw="write", bs=1 << 20, iodepth=4, size=32 * MiB, time_based=False,
                      log_avg_msec=None)
    # every 8 KiB page of the first 4 MiB once: 512 first writes per snapshot, each a copy to the array
    job = fio.FioJob(name="w", rw="randwrite", bs=8192, iodepth=8, size=4 * MiB, time_based=False,
                     log_avg_msec=None)
    with engine:
        fio.run(fill, engine.fio_target(), rig.work_dir / "fill")
        views = {}
        for _ in range(snapshots):
            name = engine.take_snapshot()
            views[name] = fetch(engine.fio_target().uri, rig.work_dir / f"{name}.at")
            fio.run(job, engine.fio_target(), rig.work_dir / f"m-{name}")
        after = engine.counters()
        assert after["engine.pages_copied"] > 0
        assert after["snapdev.writes"] > 0 and after["snapdev.bytes_written"] >= after["engine.bytes_copied"]
        for name, want in views.items():
            assert fetch(engine.snapshot_uri(name), rig.work_dir / f"{name}.now") == want, name
            assert after[f"engine.{name}.copy_write_s"] > 0 and after[f"engine.{name}.commit_s"] > 0
        assert after["engine.snapshot_allocated_bytes"] % (64 << 10) == 0
        for name in after:
            counters.spec(name)
        assert engine.describe()["snapshot_device"] == "raid5"
