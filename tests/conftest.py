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

    from snaptax.host.rig import Device, Rig
    made: list[Path] = []

    def make(engine: str, capacity: int) -> Rig:
        d = Path(tempfile.mkdtemp(prefix=f"{engine}-", dir=os.environ.get("SNAPTAX_TEST_TMP", "/var/tmp")))
        made.append(d)
        return Rig(name="t", kind="embedded", description="test", engines=(engine,), work_dir=d,
                   devices=(Device(name="ssd", type="file", medium="ssd", capacity=capacity),))
    yield make
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def smoke_run(data_dir, work_dir):
    """Factory: the published smoke run of a study. `make test` measures every study at the smoke profile once, in
    its notebook stage, before pytest, and names that data directory in SNAPTAX_SMOKE_DATA; a test that checks a
    smoke run end to end reads that run instead of measuring the same plan a second time (minutes per study).
    Without it (pytest alone, `make unit`), the run is measured here into the test's private data directory."""
    from snaptax import studies
    from snaptax.record import RunRecord

    def get(study: str) -> RunRecord:
        shared = os.environ.get("SNAPTAX_SMOKE_DATA")
        runs = sorted((Path(shared) / "local" / study).glob("*-smoke")) if shared else []
        if runs:
            return RunRecord.load(runs[-1])
        return RunRecord.load(studies.get(study).run("local", "smoke"))
    return get


@pytest.fixture(autouse=True, scope="session")
def _measure_from_this_tree():
    """Tests measure from the tree as it is (into temporary data directories): uncommitted code is allowed."""
    old = os.environ.get("SNAPTAX_ALLOW_DIRTY")
    os.environ["SNAPTAX_ALLOW_DIRTY"] = "1"
    yield
    if old is None:
        os.environ.pop("SNAPTAX_ALLOW_DIRTY", None)
    else:
        os.environ["SNAPTAX_ALLOW_DIRTY"] = old


@pytest.fixture(autouse=True, scope="session")
def _derived_cache(tmp_path_factory):
    """Runs' derived values (snaptax.derived) are cached in a temporary directory, never the checkout's build/: make
    test's scratch directory when it names one (SNAPTAX_TEST_DERIVED_DIR, shared by its pytest runs, so a committed
    run analysed in one step is read back in the next instead of analysed again), else one of this session's own."""
    shared = os.environ.get("SNAPTAX_TEST_DERIVED_DIR")
    d = Path(shared) if shared else tmp_path_factory.mktemp("derived")
    old = os.environ.get("SNAPTAX_DERIVED_DIR")
    os.environ["SNAPTAX_DERIVED_DIR"] = str(d)
    yield d
    if old is None:
        os.environ.pop("SNAPTAX_DERIVED_DIR", None)
    else:
        os.environ["SNAPTAX_DERIVED_DIR"] = old


def pytest_configure(config):
    """SIGTERM stops the run as Ctrl-C does, so that fixtures' teardown (loop devices, mounts, swap, daemons) still
    runs: a test run ended by SIGTERM (a CI runner's stop, `pkill`) left the attached-rig test's loop devices
    mounted on 2026-11-28. The CLI does the same for itself (host.procs.install_sigterm_as_exit)."""
    import signal
    import threading

    def stop(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)


# Test modules that only compute (analyses of synthetic runs, models, the paper's rendering, records, statistics):
# they measure nothing, start no daemon, tool or kernel and hold no machine-wide resource (loop devices, LVs, the
# measurement lock), so `make test` runs them two at a time (pytest-xdist, -m parallel) and the rest one at a time.
# A module is listed here by its path under tests/ (or its directory); a test in it marked integration, guest, browser
# or committed is not parallel.
PARALLEL_DIRS = ("models", "paper", "record", "studies")
PARALLEL_MODULES = ("test_analysis.py", "test_claims.py", "test_claimstable.py", "test_counters.py",
                    "test_derived.py", "test_expect.py", "test_inference.py", "test_judged.py", "test_lateness.py",
                    "test_power.py", "test_registration.py", "test_seeds.py", "test_stats.py",
                    "test_studyparams.py", "test_values.py", "test_upgrade.py", "test_operatingpoints.py",
                    "test_architecture.py", "test_metadata.py", "test_environment.py", "test_plan.py",
                    "spindle/test_spindle_model.py", "spindle/test_tier.py", "spindle/test_ctrlcache.py",
                    "spindle/test_spindle_rig.py", "host/test_rig.py", "bench/test_spindle.py", "bench/test_models.py",
                    "engines/lvmthin/test_config.py", "engines/lvmthin/test_counters.py",
                    "engines/lvmthin/test_script.py")
SERIAL_MARKS = {"integration", "guest", "browser", "committed"}


def pytest_collection_modifyitems(config, items):
    tests = Path(__file__).parent
    for item in items:
        rel = Path(item.path).relative_to(tests).parts
        listed = rel[0] in PARALLEL_DIRS and len(rel) > 1 or "/".join(rel) in PARALLEL_MODULES
        if listed and not SERIAL_MARKS & {m.name for m in item.iter_markers()}:
            item.add_marker(pytest.mark.parallel)
