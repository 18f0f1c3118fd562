import os
import shutil
from pathlib import Path

import pytest


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    """A private data/ so tests never write into the checkout's data."""
    d = tmp_path / "data"
    monkeypatch.setenv("SNAPTAX_DATA_DIR", str(d))
    return d


@pytest.fixture
def work_dir(tmp_path_factory, monkeypatch) -> Path:
    # Under /var/tmp (not tmpfs): qemu-storage-daemon opens the images with O_DIRECT.
    d = Path(tmp_path_factory.mktemp("w", numbered=True))
    base = Path("/var/tmp/snaptax-tests") / d.name
    base.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("SNAPTAX_WORK_DIR", str(base))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _have(*tools: str) -> bool:
    return all(shutil.which(t) or shutil.which(t, path="/usr/sbin:/sbin") for t in tools)


requires_qsd = pytest.mark.skipif(not _have("qemu-storage-daemon", "fio", "losetup"),
                                  reason="needs qemu-storage-daemon, fio and losetup (make setup)")
requires_spindles = pytest.mark.skipif(not _have("nbdkit", "fio", "qemu-storage-daemon"),
                                       reason="needs nbdkit, fio, qemu-storage-daemon")
requires_root = pytest.mark.skipif(os.geteuid() != 0, reason="loop devices need root")


@pytest.fixture
def scratch_rig():
    """Factory of a one-device embedded rig in its own temporary work directory, removed afterwards."""
    import tempfile

    from snaptax.rig import Device, Rig
    made: list[Path] = []

    def make(engine: str, capacity: int) -> Rig:
        d = Path(tempfile.mkdtemp(prefix=f"{engine}-", dir=os.environ.get("SNAPTAX_TEST_TMP", "/var/tmp")))
        made.append(d)
        return Rig(name="t", kind="embedded", description="test", engines=(engine,), work_dir=d,
                   devices=(Device(name="ssd", type="file", medium="ssd", capacity=capacity),))
    yield make
    for d in made:
        shutil.rmtree(d, ignore_errors=True)
