"""Integration tests: the engine served by nbdkit, driven over NBD; QEMU copy-before-write as the reference.

Each test starts its daemons through a ProcessGroup and checks that none is left running.
"""
from __future__ import annotations

import os
import random
import signal

import pytest

from snaptax import fio
from snaptax.cofw.launch import CofwEngineConfig, CofwServer
from snaptax.cofw.validate import fetch, replay, validate_against_qemu, write_sequence
from snaptax.host.procs import ProcessGroup

pytestmark = pytest.mark.integration
MiB = 1 << 20


def assert_all_stopped(children) -> None:
    for child in children:
        assert child.proc.poll() is not None, f"{child.name} (pid {child.proc.pid}) still running"


def apply(model: bytearray, ops, payload) -> None:
    pos = 0
    for off, n in ops:
        model[off:off + n] = payload[pos:pos + n]
        pos += n


@pytest.mark.parametrize("on_device", [False, True], ids=["sparse-files", "snapshot-device"])
def test_integrity_snapshots_delete_fio_restart_and_crash(disk_dir, on_device):
    """Sparse files beside the run, or (on_device) the pages on a device of their own with journals in snaps/."""
    size = 32 * MiB
    original = random.Random(11).randbytes(size)
    src, snaps = disk_dir / "src.img", disk_dir / "snaps"
    src.write_bytes(original)
    model = bytearray(original)
    cfg = CofwEngineConfig(page_size=8192)
    snapdev, suffix = None, ".snap"
    if on_device:
        snapdev, suffix = str(disk_dir / "dev.img"), ".map"
        with open(snapdev, "wb") as f:
            f.truncate(4 * size)
    spawned = []
    with ProcessGroup() as group:
        server = CofwServer(group, disk_dir / "run", src, snaps, cfg, snapshot_device=snapdev).start()
        spawned += group.children

        def check(views: dict[str, bytes], tag: str) -> None:
            assert fetch(server.uri("live"), disk_dir / "live.out") == model, f"live ({tag})"
            for name, want in views.items():
                assert fetch(server.uri(f"snap-{name}"), disk_dir / f"{name}.out") == want, f"{name} ({tag})"

        ops, payload = write_sequence(1, size, 150)            # before any snapshot
        replay(server.uri(), ops, payload, disk_dir)
        apply(model, ops, payload)
        server.create("s1")
        expected = {"s1": bytes(model)}
        ops, payload = write_sequence(2, size, 150)
        replay(server.uri(), ops, payload, disk_dir)
        apply(model, ops, payload)
        server.create("s2")
        expected["s2"] = bytes(model)

        # fio at QD32 with crc32c verify through the engine: concurrent writers racing on page copies.
        region = (8 * MiB, 8 * MiB)
        job = fio.FioJob(name="verify", rw="randwrite", bs=4096, iodepth=32, size=region[1], offset=region[0],
                         time_based=False, runtime_s=None, verify="crc32c", log_avg_msec=None)
        fio.run(job, fio.FioTarget("nbd", uri=server.uri()), disk_dir / "fio")
        live = fetch(server.uri(), disk_dir / "live.out")
        lo, hi = region[0], region[0] + region[1]
        assert live[:lo] == model[:lo] and live[hi:] == model[hi:], "fio wrote outside its region"
        model[lo:hi] = live[lo:hi]
        check(expected, "after fio")
        c = server.counters()
        assert c["pages_copied"] == sum(c["copied_pages"].values()) and c["pages_copied"] > 0

        ops, payload = write_sequence(3, size, 100)
        replay(server.uri(), ops, payload, disk_dir)
        apply(model, ops, payload)
        server.delete("s1")
        del expected["s1"]
        assert not (snaps / f"s1{suffix}").exists() and (snaps / f"s2{suffix}").exists()
        check(expected, "after delete")

        # Clean restart: nbdkit's cleanup closes the volume; the snapshot is re-attached from its file.
        server.close()
        group.stop(group.children[-1])
        server = CofwServer(group, disk_dir / "run", src, snaps, cfg, snapshot_device=snapdev).start()
        spawned += group.children
        check(expected, "after restart")

        # Crash: SIGKILL, no cleanup. Copies were fdatasync'ed before each source write; restart recovers.
        ops, payload = write_sequence(4, size, 100)
        replay(server.uri(), ops, payload, disk_dir)
        apply(model, ops, payload)
        server.close()
        child = group.children[-1]
        os.killpg(child.proc.pid, signal.SIGKILL)
        child.proc.wait(timeout=10)
        group.children.remove(child)
        server = CofwServer(group, disk_dir / "run", src, snaps, cfg, snapshot_device=snapdev).start()
        spawned += group.children
        check(expected, "after SIGKILL")
        assert server.counters()["snapshots"] == ["s2"]
        server.close()
    assert_all_stopped(spawned)


def test_control_errors_are_one_line(disk_dir):
    src = disk_dir / "src.img"
    src.write_bytes(bytes(4 * MiB))
    with ProcessGroup() as group:
        server = CofwServer(group, disk_dir / "run", src, disk_dir / "snaps", CofwEngineConfig()).start()
        spawned = list(group.children)
        server.create("a")
        from snaptax.errors import EngineError
        for op, args, msg in [("create", {"name": "a"}, "already exists"), ("delete", {"name": "zz"}, "no snapshot"),
                              ("create", {"name": "../x"}, "must match"), ("frobnicate", {}, "unknown op")]:
            with pytest.raises(EngineError, match=msg) as exc:
                server.call(op, **args)
            assert "\n" not in str(exc.value)
        server.close()
    assert_all_stopped(spawned)


def test_matches_qemu_copy_before_write(disk_dir):
    """64 KiB grains: identical point-in-time views and live volumes, equal allocated sizes of the copy targets."""
    r = validate_against_qemu(disk_dir / "v", size=32 * MiB, writes=300, seed=4)
    assert r.views_identical and r.view_equals_source_at_snapshot and r.live_identical
    assert r.qemu_target_allocated == r.engine_snapshot_allocated == r.engine_pages_copied * 65536
    assert r.ok


def test_start_failure_is_one_line_and_leaves_nothing(disk_dir):
    from snaptax.errors import EngineError
    with ProcessGroup() as group:
        with pytest.raises(EngineError, match="cannot open source") as exc:
            CofwServer(group, disk_dir / "run", disk_dir / "missing.img", disk_dir / "snaps",
                       CofwEngineConfig()).start()
        assert "\n" not in str(exc.value)
        src = disk_dir / "src.img"
        src.write_bytes(bytes(MiB))
        with pytest.raises(EngineError, match="the source itself") as exc:
            CofwServer(group, disk_dir / "run", src, disk_dir / "snaps", CofwEngineConfig(),
                       snapshot_device=str(src)).start()
        assert "\n" not in str(exc.value)
        spawned = list(group.children)
    assert_all_stopped(spawned)
