"""The nbdkit plugin's bookkeeping, in-process (nbdkit's module stubbed): a command the simulator completes is
always handed back to the thread that waits for it."""
import importlib
import json
import sys
import time
import types
from pathlib import Path

import pytest

from snaptax.spindle.profiles import to_json
from snaptax.spindle.rigfiles import parse_device

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "nbdkit", types.SimpleNamespace(THREAD_MODEL_PARALLEL=3))
    mod = importlib.reload(importlib.import_module("snaptax.spindle.plugin"))
    capacity = 64 << 20
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"spec": to_json(parse_device({"device": "raid1_10k"}, "test")),
                                "capacity": capacity, "name": "t"}))
    backing = tmp_path / "disk.img"
    backing.write_bytes(b"")
    backing.open("r+b").truncate(capacity)
    for key, value in (("srcdir", str(SRC)), ("spec", str(spec)), ("file", str(backing)),
                       ("counters", str(tmp_path / "counters.json"))):
        mod.config(key, value)
    mod.config_complete()       # the pump is not started: nothing delivers behind the test's back
    yield mod
    mod._state.shutdown()


def test_a_client_closing_delivers_other_clients_completions(plugin):
    state = plugin._state
    req = state.request("read", 1 << 20, 4096)      # another client's read, in service on a member
    assert not req.done and state.reqs
    time.sleep(0.1)                                 # well past its simulated completion
    plugin.close(None)                              # a client disconnects: the simulator is advanced
    # the read completed in that advance: it must be handed to its thread, or the thread waits for ever
    assert req.done and not state.reqs
    state.finish(req)                               # returns at once


def test_a_command_the_simulator_refuses_is_not_kept_outstanding(plugin, monkeypatch):
    state = plugin._state

    def refuse(*args, **kwargs):
        raise ValueError("refused")
    monkeypatch.setattr(state.sim, "submit", refuse)
    with pytest.raises(ValueError):
        state.request("write", 0, 4096)
    assert not state.reqs and state.errors == 1 and "refused" in state.last_error


def test_a_self_timed_command_replies_at_its_eta_and_is_counted_once(plugin):
    state = plugin._state
    req = state.request("read", 1 << 20, 4096)      # the array is idle: dispatched at once, its eta fixed
    eta = state.sim.etas[req.token]
    state.finish(req)                               # times itself, replies without advancing the simulator
    assert req.done and not state.reqs and state.self_timed == 1
    assert req.token in state.sim.etas              # the simulator has not yet processed the completion
    assert state.now() >= eta and state.late_n == 1 and state.flush_late_n == 0
    late = state.late_sum
    plugin.close(None)                              # an advance processes it: not released (or counted) again
    assert state.late_n == 1 and state.late_sum == late and not state.released
    assert req.token not in state.sim.etas


def test_a_flush_is_replied_at_its_time_not_before(plugin):
    state = plugin._state
    req = state.request("flush", 0, 0)              # nothing dirty: completes after the members' overhead
    assert not req.done and req.token in state.sim.sleep_etas
    eta = state.sim.etas[req.token]
    state.finish(req)                               # its thread sleeps until then (no pump in this fixture)
    assert req.done and state.now() >= eta and state.self_timed == 1
    assert state.late_n == 1 and state.late_sum >= 0
    # counted among the flushes too, and so written out
    assert state.flush_late_n == 1 and state.flush_late_sum == state.late_sum
    state._dump()
    from snaptax.spindle.serve import flat_counters
    written = flat_counters(json.loads(Path(state.counters_path).read_text()))
    assert written["emulator.flushes_released"] == 1 and written["emulator.released"] == 1
