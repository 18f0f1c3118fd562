"""Throttled rig devices: the rig file's `throttle` read and checked, the blkio group's files written as cgroup v1
reads them (on a stand-in directory), groups a killed run left removed; on this host's own blkio hierarchy (root),
a group that limits a loop device, holds the process it admits and is gone with its ProcessGroup."""
import os
import subprocess
import sys

import pytest

from snaptax.errors import ConfigError
from snaptax.host import backends, blkio, rig as rigmod
from snaptax.host.procs import ProcessGroup

from ..conftest import requires_root


def test_a_throttle_gives_each_blkio_file_its_value_in_bytes_and_commands():
    t = blkio.parse_throttle({"read_mb_s": 175, "write_mb_s": 125.5, "write_iops": 15000}, "r.yaml", "devices.a")
    assert t == blkio.DeviceThrottle(read_mb_s=175.0, write_mb_s=125.5, write_iops=15000)
    assert t.limits() == {"blkio.throttle.read_bps_device": 175_000_000,
                          "blkio.throttle.write_bps_device": 125_500_000,
                          "blkio.throttle.write_iops_device": 15000}


@pytest.mark.parametrize("raw,field", [
    ({}, "devices.a.throttle"),
    ([1], "devices.a.throttle"),
    ({"write_gb_s": 1}, "devices.a.throttle.write_gb_s"),
    ({"write_mb_s": 0}, "devices.a.throttle.write_mb_s"),
    ({"write_mb_s": "fast"}, "devices.a.throttle.write_mb_s"),
    ({"read_iops": 1.5}, "devices.a.throttle.read_iops"),
    ({"read_iops": True}, "devices.a.throttle.read_iops"),
])
def test_a_malformed_throttle_names_its_field(raw, field):
    with pytest.raises(ConfigError) as err:
        blkio.parse_throttle(raw, "r.yaml", "devices.a.throttle")
    assert f"field '{field}'" in str(err.value) and "\n" not in str(err.value)


def test_a_rig_device_carries_its_throttle_and_a_spindle_cannot():
    rig = rigmod.parse_rig({"name": "x", "kind": "embedded", "devices": {
        "a": {"type": "file", "medium": "ssd", "capacity": "1G", "throttle": {"write_mb_s": 100}}}}, "r.yaml")
    assert rig.device("a").throttle == blkio.DeviceThrottle(write_mb_s=100.0)
    with pytest.raises(ConfigError, match="devices.s.throttle"):
        rigmod.parse_rig({"name": "x", "kind": "embedded", "devices": {
            "s": {"type": "spindle", "medium": "hdd", "capacity": "1G", "spindle": {"device": "raid1_10k"},
                  "throttle": {"write_mb_s": 100}}}}, "r.yaml")


def test_seed_004s_two_ssds_on_the_local_rig_have_the_same_rates_of_their_own():
    rig = rigmod.load("local")
    source, snapshots = rig.device("ssd_source"), rig.device("ssd_snapshots")
    assert source.throttle is not None and source.throttle == snapshots.throttle
    assert rig.device("ssd").throttle is None        # every other study's device is the host disk as it is


def test_an_engine_without_a_blkio_group_cannot_open_a_throttled_device(tmp_path):
    rig = rigmod.parse_rig({"name": "x", "kind": "embedded", "work_dir": str(tmp_path), "devices": {
        "a": {"type": "file", "medium": "ssd", "capacity": "1M", "throttle": {"write_mb_s": 100}}}}, "r.yaml")
    with ProcessGroup() as group, pytest.raises(ConfigError, match="devices.a.throttle"):
        backends.open_device(rig, rig.device("a"), group)
    assert not list(tmp_path.rglob("*.img"))          # refused before anything was made


def _fake_root(tmp_path):
    root = tmp_path / "blkio"
    root.mkdir()
    for name in ("blkio.throttle.write_bps_device", "cgroup.procs"):
        (root / name).write_text("")
    return root


def test_a_host_without_the_blkio_controller_is_named_in_one_line(tmp_path):
    assert not blkio.available(tmp_path)
    with pytest.raises(ConfigError) as err:
        blkio.require("r.yaml", "ssd_source", tmp_path)
    assert "devices.ssd_source.throttle" in str(err.value) and "cgroup v1 blkio" in str(err.value)


def test_a_group_writes_each_limit_for_the_node_and_admits_a_process(tmp_path):
    root = _fake_root(tmp_path)
    with ProcessGroup() as group:
        g = blkio.BlkioGroup(group, root)
        assert g.path.parent == root and g.path.name.startswith(f"snaptax-{os.getpid()}-")
        g.limit("/dev/null", blkio.DeviceThrottle(write_mb_s=2.0, read_iops=7))
        st = os.stat("/dev/null")
        majmin = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        assert (g.path / "blkio.throttle.write_bps_device").read_text() == f"{majmin} 2000000\n"
        assert (g.path / "blkio.throttle.read_iops_device").read_text() == f"{majmin} 7\n"
        g.admit(12345)
        assert (g.path / "cgroup.procs").read_text() == "12345\n"


def test_groups_a_killed_run_left_are_removed_and_live_ones_kept(tmp_path):
    root = _fake_root(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = root / f"snaptax-{dead.stdout.strip()}-0"
    live = root / f"snaptax-{os.getpid()}-3"
    other = root / "someone-else"
    for d in (left, live, other):
        d.mkdir()
    assert blkio.remove_stale(root) == [left.name]
    assert live.exists() and other.exists() and not left.exists()


@requires_root
@pytest.mark.skipif(not blkio.available(), reason="no cgroup v1 blkio controller")
def test_on_the_host_a_group_limits_a_loop_device_holds_its_process_and_goes_with_its_process_group(tmp_path):
    image = tmp_path / "d.img"
    image.write_bytes(b"\0" * (1 << 20))
    with ProcessGroup() as group:
        loop = backends.attach_loop(image, group)
        g = blkio.BlkioGroup(group)
        g.limit(loop, blkio.DeviceThrottle(write_iops=300))
        sleeper = group.spawn(["sleep", "60"], name="sleeper")
        g.admit(sleeper.proc.pid)
        st = os.stat(loop)
        assert f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)} 300" in \
            (g.path / "blkio.throttle.write_iops_device").read_text()
        assert f"blkio:/{g.path.name}" in open(f"/proc/{sleeper.proc.pid}/cgroup").read()
        path = g.path
    assert not path.exists()
