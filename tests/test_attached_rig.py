"""The attached-rig path run for real, on loop devices standing in for attached disks (tests/attached.py).

  * the guards on real devices: mounted, a mounted partition, swap, mounted or swapped through a second device
    node, opened exclusively elsewhere (O_EXCL held by a helper process), held by another device (skipped without
    device-mapper), a stable id that is not a block device, a capacity beyond the device — each refused with one
    line naming the device, by `snaptax rig check` too, and by open_device before a byte is written;
  * a partition named as the rig device: passes when free, with its own counters and identity;
  * the chain_length study's whole smoke plan end to end on the rig — qcow2 on the block device through the
    study's own run() (both qcow2 configurations, then its LVM thin row in the TCG guest on the passed-through
    device: 66 fio runs) — and an interrupt of the LVM thin guest alone; each run record complete, attached, not
    emulated, with the loop device's own counters;
  * nothing left behind (loop device, mount, swap, link, process), also when interrupted by SIGINT: a plain
    process holding the guard states, pytest itself with them in a fixture, the qcow2 study, the LVM thin guest.
About 2.7 minutes in all, measured 2026-11-26 (the smoke plan 134 s: qcow2 ~60 s, LVM thin ~75 s; the interrupts
~25 s; the guards ~2 s).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from snaptax import paths, profiles
from snaptax.errors import DeviceRefused
from snaptax.host import devices, rig as rigmod
from tests.attached import LINK_PREFIX, leftovers, loop_rig
from tests.conftest import _have, requires_qsd, requires_root

requires_disk_tools = pytest.mark.skipif(not _have("mkfs.ext4", "mkswap", "swapon", "swapoff", "mount", "umount",
                                                   "partx"),
                                         reason="needs e2fsprogs, util-linux and mount (mkfs.ext4, mkswap, partx)")
pytestmark = [pytest.mark.integration, requires_qsd, requires_root, requires_disk_tools]

MiB = 1 << 20
# The study test's devices (sparse backing files): the interrupted LVM thin child's physical volume holds a pool of
# (max_chain + 1) volumes plus the flat volume beside it (1.1 GiB at smoke).
STUDY_CAPACITY = 2 << 30
GUARDS = ("plain", "mounted", "partition", "swap", "held", "exclusive", "mounted-alias", "swap-alias",
          "partitioned")


@pytest.fixture(scope="module")
def guard_rig():
    """A small loop-device rig, one device per guard; removed (and checked to be gone) afterwards."""
    with loop_rig(GUARDS, capacity=64 * MiB) as lr:
        yield lr
    assert leftovers(lr.root) == []


@pytest.fixture(scope="module")
def study_rig():
    # qcow2 only: the study's LVM thin row (a TCG guest served the same device, 1.5 of the test's 2.5 minutes) runs
    # on an attached device in test_interrupt_leaves_nothing_behind[lvmthin], up to its interruption, and to its end
    # on the default rig in `make test`'s chain_length notebook; `make test` stays within its 35 minutes
    with loop_rig(("ssd", "hdd"), capacity=STUDY_CAPACITY, engines=("qcow2",)) as lr:
        yield lr
    assert leftovers(lr.root) == []


def refusal(rig: rigmod.Rig, name: str) -> str:
    with pytest.raises(DeviceRefused) as info:
        devices.check_destroyable(rig, rig.device(name))
    message = str(info.value)
    assert "\n" not in message, message
    assert f"devices.{name}" in message, message
    return message


# ---------------------------------------------------------------- the rig itself

def test_the_links_are_stable_ids_only_inside_the_test(guard_rig):
    link = str(guard_rig.links["plain"])
    assert Path(link).name == f"{LINK_PREFIX}plain"
    assert rigmod.is_stable_id(link)
    # The production rule, untouched: outside the test's context the same link is not a stable id.
    assert rigmod.STABLE_ID_PREFIXES[0] == "/dev/disk/by-id/"
    saved = rigmod.STABLE_ID_PREFIXES
    try:
        rigmod.STABLE_ID_PREFIXES = saved[:1]
        with pytest.raises(Exception, match="stable id"):
            rigmod.load(guard_rig.rig_file)
    finally:
        rigmod.STABLE_ID_PREFIXES = saved
    assert not rigmod.is_stable_id("/dev/disk/by-id/../../loop0")


def test_a_free_loop_device_passes(guard_rig):
    rig = guard_rig.rig()
    assert rig.kind == "attached" and rig.enabled and rig.allow_destroy
    assert devices.check_destroyable(rig, rig.device("plain")) == guard_rig.loops["plain"]


# ---------------------------------------------------------------- the guards on real devices

def test_mounted_device_is_refused(guard_rig):
    guard_rig.mount("mounted")
    message = refusal(guard_rig.rig(), "mounted")
    assert f"{guard_rig.loops['mounted']} is mounted" in message


def test_device_with_a_mounted_partition_is_refused(guard_rig):
    part = guard_rig.partition_mounted("partition")
    message = refusal(guard_rig.rig(), "partition")
    assert f"{part} is mounted" in message


def test_swap_device_is_refused(guard_rig):
    guard_rig.swap("swap")
    message = refusal(guard_rig.rig(), "swap")
    assert f"{guard_rig.loops['swap']} is a swap device" in message


def test_device_mounted_or_swapped_under_another_name_is_refused_as_such(guard_rig):
    """mount and swapon print the node they were given; a second node of the same device (major:minor) must not
    hide that the device is mounted or is swap (before: only the exclusive open caught it, as 'in use')."""
    guard_rig.mount_via("mounted-alias", guard_rig.alias("mounted-alias"))
    assert f"{guard_rig.loops['mounted-alias']} is mounted" in refusal(guard_rig.rig(), "mounted-alias")
    guard_rig.swap("swap-alias", guard_rig.alias("swap-alias"))
    assert f"{guard_rig.loops['swap-alias']} is a swap device" in refusal(guard_rig.rig(), "swap-alias")


def test_the_study_path_refuses_before_writing(guard_rig):
    """open_device, which every engine calls, refuses the mounted device; the filesystem on it is untouched."""
    from snaptax.host.backends import open_device
    from snaptax.host.procs import ProcessGroup
    rig = guard_rig.rig()
    canary = guard_rig.mount("mounted") / "canary"
    canary.write_text("still here")
    group = ProcessGroup()
    try:
        with pytest.raises(DeviceRefused, match="is mounted"):
            open_device(rig, rig.device("mounted"), group, tag="t")
    finally:
        group.close()
    os.sync()
    assert canary.read_text() == "still here"


def test_a_partition_as_the_rig_device(guard_rig):
    """A stable id may name a partition (by-id/...-part1): it passes when free, and its counters and identity
    are the partition's (before: /sys/block has no partitions, so both came back empty)."""
    part = guard_rig.partition("partitioned")
    link = guard_rig.link_to("partitioned-part1", part)
    raw = {"name": "x", "kind": "attached", "enabled": True, "allow_destroy": True,
           "devices": {"p1": {"type": "block", "medium": "ssd", "capacity": "32M", "path": str(link)}}}
    rig = rigmod.parse_rig(raw, "x.yaml")
    assert devices.check_destroyable(rig, rig.device("p1")) == part
    assert set(devices.diskstats(part.name)) >= {"reads", "writes", "sectors_written"}
    disk = devices.identity(rig, rig.device("p1"))["disk"]
    assert disk["kernel_name"] == part.name and disk["partition_of"] == guard_rig.loops["partitioned"].name
    assert disk["size_bytes"] == 64 * MiB - MiB and disk["rotational"] is not None
    # The whole disk, with its partition free, passes too; mounted, the disk is refused for its partition.
    whole = guard_rig.rig()
    assert devices.check_destroyable(whole, whole.device("partitioned")) == guard_rig.loops["partitioned"]
    guard_rig.partition_mounted("partitioned")
    assert f"{part} is mounted" in refusal(whole, "partitioned")
    assert f"{part} is mounted" in refusal(rig, "p1")


def test_capacity_beyond_the_device_is_refused(guard_rig):
    raw = {"name": "x", "kind": "attached", "enabled": True, "allow_destroy": True,
           "devices": {"big": {"type": "block", "medium": "ssd", "capacity": "1G",
                               "path": str(guard_rig.links["plain"])}}}
    assert "exceeds the device's 67108864 bytes" in refusal(rigmod.parse_rig(raw, "x.yaml"), "big")


def test_device_held_by_another_device_is_refused(guard_rig):
    holder = guard_rig.stack("held")
    if holder is None:
        pytest.skip("no device-mapper in this kernel (/proc/devices): only a stacking driver (device-mapper, MD "
                    "RAID, bcache) fills /sys/block/X/holders, and none is available here — loop devices stacked "
                    "on loop devices, partitions and filesystems never register as holders")
    message = refusal(guard_rig.rig(), "held")
    assert f"{guard_rig.loops['held']} is held by" in message


def test_device_open_exclusively_elsewhere_is_refused(guard_rig):
    guard_rig.hold_exclusive("exclusive")
    message = refusal(guard_rig.rig(), "exclusive")
    assert f"{guard_rig.loops['exclusive']} is in use (exclusive open failed)" in message


def test_stable_id_of_something_not_a_block_device_is_refused(guard_rig, tmp_path):
    regular = guard_rig.root / "not-a-disk.img"
    regular.write_bytes(b"\0" * 4096)
    link = guard_rig.links_dir / f"{LINK_PREFIX}regular-file"
    link.symlink_to(regular)
    raw = {"name": "x", "kind": "attached", "enabled": True, "allow_destroy": True,
           "devices": {"f": {"type": "block", "medium": "ssd", "capacity": 4096, "path": str(link)}}}
    rig = rigmod.parse_rig(raw, "x.yaml")
    assert "is not a block device" in refusal(rig, "f")


def test_rig_check_prints_one_line_per_device(guard_rig, capsys):
    """`snaptax rig check` on the rig: the refusals above, each on its device's line; the free one passes."""
    from snaptax import cli
    guard_rig.mount("mounted")
    guard_rig.partition_mounted("partition")
    guard_rig.swap("swap")
    guard_rig.hold_exclusive("exclusive")
    assert cli.cmd_rig_check(argparse.Namespace(rig=str(guard_rig.rig_file))) == 0
    lines = {line.split(":")[0].strip(): line for line in capsys.readouterr().out.splitlines()}
    assert "passes the safety checks" in lines["device plain"]
    for guard in ("mounted", "partition", "swap", "exclusive"):
        assert "-> refused: " in lines[f"device {guard}"] and guard_rig.loops[guard].name in lines[f"device {guard}"]
    assert "not emulated (real devices)" in "\n".join(lines.values())


# ---------------------------------------------------------------- the chain_length smoke plan on the rig

def _check_run(record, rig_file: Path, device: str, loop: Path) -> None:
    m = record.manifest
    assert m.rig == "loop-test" and m.rig_kind == "attached" and m.rig_file == str(rig_file)
    assert m.emulated is False and "EMULATED" not in m.device_label()
    assert m.measured_devices == (device,)
    entry = next(d for d in m.devices if d["name"] == device)
    assert entry["type"] == "block" and entry["emulated"] is False
    assert entry["disk"]["kernel_name"] == loop.name and entry["disk"]["size_bytes"] == STUDY_CAPACITY
    assert m.measurements == m.planned_points == len(record.measurements) > 0
    results = record.results()   # one row per measurement and direction
    assert len(results[["variant", "index"]].drop_duplicates()) == m.planned_points
    assert (results["errors"] == 0).all() and (results["iops"] > 0).all()
    assert "no emulated measurements" in record.validity_line()
    for meas in record.measurements:
        assert (meas.directory / "fio.json").exists() and (meas.directory / "measurement.json").exists()
    # The host counters are the loop device's own /sys/block/loopN/stat: every run wrote to the rig device.
    per = record.per_measurement(counters=("host.sectors_written",))
    assert (per["host.sectors_written"] > 0).all(), per


def test_chain_length_smoke_on_the_block_device(study_rig, data_dir):
    """The chain_length smoke plan as the study runs it on a rig whose engines are qcow2's, one part of it (its first
    redo-log configuration; the second runs the same path on the same device with another qcow2 cache, and measuring
    both took 68 s of make test's 35 minutes): measured on the block device, published as an attached rig's run."""
    from snaptax import studies
    from snaptax.record import RunRecord
    from snaptax.studies.chain_length import plan as planmod
    t0 = time.monotonic()
    smoke = profiles.get("smoke")
    part = planmod.parts(smoke, lvmthin=False)[0]
    published = studies.get("chain_length").run(str(study_rig.rig_file), "smoke", device="ssd", part=part)
    record = RunRecord.load(published)
    assert published.parent == data_dir / "loop-test" / "chain_length"
    _check_run(record, study_rig.rig_file, "ssd", study_rig.loops["ssd"])
    assert record.manifest.planned_points == planmod.build_plan(smoke, lvmthin=False, part=part).points()
    assert set(record.results()["variant"]) == {planmod.configs(smoke)[0].name}
    assert max(m.chain_length for m in record.measurements) == planmod.scale(smoke).max_chain
    assert leftovers(study_rig.work_dir, directory=False) == []   # qsd and fio are gone; the loops stay
    print(f"chain_length smoke {part} (qcow2) on {study_rig.loops['ssd']}: {time.monotonic() - t0:.0f} s")


# ---------------------------------------------------------------- interrupted: nothing left behind

_CHILD = """
import sys, time
from pathlib import Path
from tests.attached import loop_rig
mode = sys.argv[1]
with loop_rig(("ssd", "held", "swap"), capacity=(64 << 20) if mode == "guards" else (2 << 30)) as lr:
    print(lr.root, flush=True)
    if mode == "guards":
        lr.mount("ssd")
        lr.hold_exclusive("held")
        lr.swap("swap")
        print("ready", flush=True)
        time.sleep(600)
    elif mode == "study":
        from snaptax import studies
        studies.get("chain_length").run(str(lr.rig_file), "smoke", device="ssd")
    else:  # lvmthin: the same plan in the TCG guest, on the device served to it by qemu-storage-daemon
        from snaptax import profiles
        from snaptax.engines.lvmthin.config import LvmThinConfig
        from snaptax.engines.lvmthin.engine import LvmThinEngine
        from snaptax.record import RunSession
        from snaptax.studies.chain_length import plan as planmod
        profile = profiles.get("smoke")
        rig = lr.rig()
        plan = planmod.variant_plan(profile)
        config = LvmThinConfig(mode="guest", pool_factor=plan.max_chain_length + 1.0)  # see the test above
        with RunSession(rig, "chain_length", profile, {}, devices_used=("ssd",)) as session:
            with LvmThinEngine(rig, rig.device("ssd"), config, profile.disk_size) as engine:
                with session.in_variant("lvmthin", engine.describe()):
                    engine.execute(plan, session)
"""
# The same states inside a pytest run, made by a fixture: Ctrl-C to pytest runs the fixture's finalizer.
_PYTEST_CHILD = """
import time
import pytest
from tests.attached import loop_rig

@pytest.fixture
def rig():
    with loop_rig(("ssd", "held", "swap"), capacity=64 << 20) as lr:
        yield lr

def test_until_interrupted(rig):
    rig.mount("ssd")
    rig.hold_exclusive("held")
    rig.swap("swap")
    print(rig.root, flush=True)
    print("ready", flush=True)
    time.sleep(600)
"""


def _as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # see tests/test_interrupt.py


@pytest.mark.parametrize("mode", ["guards", "pytest", "study", "lvmthin"])
def test_interrupt_leaves_nothing_behind(mode, data_dir, tmp_path):
    """SIGINT (Ctrl-C) while the rig's devices are mounted, swap and held (in a plain process, and in a pytest
    fixture), or while the study measures on them (qcow2 on the host, LVM thin in the guest)."""
    from snaptax.guest.vm import READY_MARK
    env = dict(os.environ, SNAPTAX_DATA_DIR=str(data_dir),
               PYTHONPATH=os.pathsep.join([str(paths.REPO_ROOT / "src"), str(paths.REPO_ROOT)]))
    if mode == "pytest":
        (tmp_path / "test_child.py").write_text(_PYTEST_CHILD)
        argv = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_child.py"]
    else:
        argv = [sys.executable, "-c", _CHILD, mode]
    proc = subprocess.Popen(argv, cwd=tmp_path if mode == "pytest" else paths.REPO_ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=_as_from_a_terminal)
    root = None
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        while mode == "pytest" and first and not first.startswith("/"):   # pytest's own first lines
            first = proc.stdout.readline().strip()
        root = Path(first.lstrip("."))
        assert root.name.startswith("snaptax-attached-"), proc.stderr.read() if proc.stderr else ""
        deadline = time.monotonic() + 300   # as tests/test_interrupt.py: the child may wait for the lock
        if mode in ("guards", "pytest"):
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        elif mode == "lvmthin":
            while time.monotonic() < deadline:   # the guest runs the plan: let it boot and start measuring
                guest = subprocess.run(["pgrep", "-f", f"qemu-system.*{root}"], capture_output=True, text=True)
                console = list(root.glob("work/loop-test/run/*/guest/console.log"))
                if guest.stdout.strip() and console and READY_MARK in console[0].read_text(errors="replace"):
                    time.sleep(3)   # into the plan: the prefill and the first runs
                    break
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.2)
            else:
                pytest.fail("the guest never started measuring")
        else:
            staging = root / "work" / "loop-test" / "staging" / "chain_length"
            while time.monotonic() < deadline:
                # The measurement lock is held by the child: any measuring fio is the child's.
                fio = subprocess.run(["pgrep", "-f", "fio --output-format=json"], capture_output=True, text=True).stdout
                if fio.strip() and len(list(staging.glob("*/measurements/*/*/measurement.json"))) >= 2:
                    break
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.2)
            else:
                pytest.fail("the study never reached its third fio run")
        assert leftovers(root) != []   # the rig is there while the child runs
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does to the foreground process group
        out, err = proc.communicate(timeout=120)
        if mode == "pytest":
            assert proc.returncode == 2 and "KeyboardInterrupt" in out, out + err   # pytest's "interrupted"
        else:
            assert proc.returncode in (130, -signal.SIGINT) and "KeyboardInterrupt" in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(0.5)
    assert leftovers(root) == []
    assert not (data_dir / "loop-test").exists() or not any((data_dir / "loop-test").rglob("manifest.json"))
