"""guest.bench without a guest: the boots' bookkeeping around run_guest (faked), its refusals and the figures."""
from __future__ import annotations

import contextlib
import types

import pytest

from snaptax.bench import guest as gbench
from snaptax.errors import MeasurementError


@pytest.fixture
def fake_guest(tmp_path, monkeypatch):
    """build_image, the measurement lock and run_guest replaced; `ready` is what each boot reports, in order."""
    state = types.SimpleNamespace(events=[], ready=[3.5, 2.0, 4.25], runs=[], built_with=[])

    def build_image(work=None):
        state.built_with.append(work)
        state.events.append("build")
        return types.SimpleNamespace(provenance={"initrd_bytes": 3 << 20})

    @contextlib.contextmanager
    def lock():
        state.events.append("lock")
        try:
            yield
        finally:
            state.events.append("unlock")

    def run_guest(image, disks, script, out_dir, *, config, run_dir):
        assert state.events[-1] in ("lock", "boot"), "a boot outside the measurement lock"
        assert run_dir.parent.is_dir() and run_dir.parent.parent == state.work
        state.events.append("boot")
        state.runs.append((disks, script, out_dir, run_dir))
        return types.SimpleNamespace(boot_to_ready_s=state.ready[len(state.runs) - 1])

    monkeypatch.setattr(gbench, "build_image", build_image)
    monkeypatch.setattr(gbench, "measurement_lock", lock)
    monkeypatch.setattr(gbench, "run_guest", run_guest)
    state.work = tmp_path / "work"
    monkeypatch.setattr(gbench.paths, "work_dir", lambda: state.work)
    return state


def test_boot_times_in_order_image_built_before_the_lock_nothing_left(fake_guest, tmp_path):
    assert gbench.boot_times(3) == [3.5, 2.0, 4.25]
    assert fake_guest.events == ["build", "lock", "boot", "boot", "boot", "unlock"]
    assert fake_guest.built_with == [None]          # the machine-wide image cache, not the work directory
    assert all((disks, script) == ([], "true") for disks, script, _, _ in fake_guest.runs)
    assert len({run_dir for *_, run_dir in fake_guest.runs}) == 3 and len({o for _, _, o, _ in fake_guest.runs}) == 3
    assert list(fake_guest.work.iterdir()) == []      # the boots' scratch directory is removed


def test_boot_times_in_a_given_work_dir_builds_the_image_there(fake_guest, tmp_path):
    fake_guest.work = tmp_path / "mine"
    gbench.boot_times(1, work_dir=fake_guest.work)
    assert fake_guest.built_with == [fake_guest.work] and list(fake_guest.work.iterdir()) == []


def test_a_boot_without_ready_is_a_measurement_error_and_leaves_nothing(fake_guest):
    fake_guest.ready = [2.0, None, 3.0]
    with pytest.raises(MeasurementError, match="never printed its READY line"):
        gbench.boot_times(3)
    assert fake_guest.events[-1] == "unlock" and len(fake_guest.runs) == 2
    assert list(fake_guest.work.iterdir()) == []


@pytest.mark.parametrize("boots", [0, -2])
def test_boots_below_one_refused_before_anything_is_built(fake_guest, boots):
    with pytest.raises(MeasurementError, match=f"boots must be >= 1, got {boots}"):
        gbench.boot_times(boots)
    assert fake_guest.events == [] and not fake_guest.work.exists()


def test_tcg_guest_boot_s_is_the_median(fake_guest):
    assert gbench.tcg_guest_boot_s(3) == 3.5


def test_bench_figures(fake_guest):
    fake_guest.ready = [5.0, 1.0, 2.0, 4.0, 3.0]
    out = gbench.bench(5)
    assert out == {"tcg_guest_boot_s": 3.0, "tcg_guest_boot_s_min": 1.0, "tcg_guest_boot_s_max": 5.0,
                   "tcg_guest_boots": 5.0, "tcg_guest_initrd_mib": 3.0}
    assert all(isinstance(v, float) for v in out.values())

