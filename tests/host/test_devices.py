import pytest

from snaptax.errors import DeviceRefused
from snaptax.host import devices, rig as rigmod


def attached(enabled=True, allow=True, path="/dev/disk/by-id/does-not-exist-snaptax"):
    raw = {"name": "t", "kind": "attached", "enabled": enabled, "allow_destroy": allow,
           "devices": {"hdd": {"type": "block", "medium": "hdd", "capacity": "1G", "path": path}}}
    return rigmod.parse_rig(raw, "t.yaml")


def test_disabled_rig_is_refused():
    r = attached(enabled=False)
    with pytest.raises(DeviceRefused, match="disabled"):
        devices.check_destroyable(r, r.device())


def test_destruction_must_be_allowed():
    r = attached(allow=False)
    with pytest.raises(DeviceRefused, match="allow_destroy"):
        devices.check_destroyable(r, r.device())


def test_missing_device_is_refused():
    r = attached()
    with pytest.raises(DeviceRefused, match="does not exist"):
        devices.check_destroyable(r, r.device())


def test_mounted_disk_is_refused():
    from pathlib import Path
    by_id = Path("/dev/disk/by-id")
    name = devices.block_name_of_path(Path("/"))
    links = [p for p in by_id.iterdir() if p.resolve().name == name] if by_id.is_dir() and name else []
    if not links:
        pytest.skip("the root filesystem's disk has no /dev/disk/by-id name here")
    r = attached(path=str(links[0]))
    with pytest.raises(DeviceRefused, match="mounted|in use|held"):
        devices.check_destroyable(r, r.device())


def test_diskstats_of_the_root_disk_are_counters():
    from pathlib import Path
    name = devices.block_name_of_path(Path("/"))
    if not name:
        pytest.skip("root filesystem is not on a block device")
    stats = devices.diskstats(name)
    # a booted system has read its root disk, each read at least one sector: fails if the fields are misaligned
    assert stats["reads"] > 0 and stats["sectors_read"] >= stats["reads"] and "sectors_written" in stats
