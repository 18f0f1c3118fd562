"""The LVM thin engine (snaptax.engines.lvmthin.engine): guarded native mode, a stalled guest run once more,
the host's stamps of a native run, and in a TCG guest an integrity run with a chain of three snapshots created,
measured and deleted and a gated loop the host ends (marked guest)."""
from __future__ import annotations

from pathlib import Path

import pytest

from snaptax import profiles
from snaptax.engines.base import SnapshotEngine
from snaptax.engines.lvmthin import engine as lvengine
from snaptax.engines.lvmthin.config import LvmThinConfig
from snaptax.engines.lvmthin.engine import LvmThinEngine, host_has_device_mapper, read_integrity, stall_limit
from snaptax.engines.lvmthin.script import ScriptRun
from snaptax.errors import ConfigError, EngineError
from snaptax.fio import FioJob
from snaptax.plan import Measure, Plan
from snaptax.record import RunRecord, RunSession
from tests.engines.lvmthin.plans import MiB, chain_plan, fill_job, scatter_job


def test_device_mapper_detection(tmp_path):
    p = tmp_path / "devices"
    p.write_text("Character devices:\n  1 mem\n\nBlock devices:\n  7 loop\n254 device-mapper\n")
    assert host_has_device_mapper(p)
    p.write_text("Character devices:\n  1 mem\n\nBlock devices:\n  7 loop\n253 virtblk\n")
    assert not host_has_device_mapper(p)
    assert not host_has_device_mapper(tmp_path / "missing")


def test_native_mode_is_guarded(rig):
    if host_has_device_mapper():
        pytest.skip("this host has device-mapper")
    with pytest.raises(EngineError, match="no device-mapper"):
        LvmThinEngine(rig, rig.device(), LvmThinConfig(mode="native"), disk_size=16 * MiB)
    engine = LvmThinEngine(rig, rig.device(), LvmThinConfig(), disk_size=16 * MiB)
    assert isinstance(engine, SnapshotEngine) and not engine.native
    with pytest.raises(EngineError, match="whole plans"):
        engine.take_snapshot()


def test_stall_limit_follows_the_longest_step():
    quick = Plan((Measure(fill_job(1 << 30), "prefill"), Measure(scatter_job(1 << 30), "x")))
    assert stall_limit(quick, 1 << 30) == 240.0                      # the floor: 1 GiB at 16 MiB/s is 64 s
    big = Plan((Measure(fill_job(8 << 30), "prefill"),))
    assert stall_limit(big, 8 << 30) == 2 * (8 << 30) / (16 << 20)   # 512 s of filling, doubled
    timed = FioJob("t", "randrw", bs=4096, iodepth=1, numjobs=1, size=1 << 30, runtime_s=300, ramp_time_s=30)
    assert stall_limit(Plan((Measure(timed, "x"),)), 1 << 30) == 660.0


class _FakeSession:
    def __init__(self):
        self.events, self.executed = [], []

    def log_event(self, kind, **data):
        self.events.append((kind, data))

    def in_variant(self, name, description):
        import contextlib
        return contextlib.nullcontext()


def test_a_stalled_guest_is_run_once_more_on_a_fresh_engine(monkeypatch, rig):
    from snaptax.guest.vm import GuestStalled
    made = []

    class FakeEngine:
        def __init__(self, *args):
            made.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def describe(self):
            return {}

        def execute(self, plan, session):
            if len(made) < stalls_before_success:
                raise GuestStalled("guest console silent for 300 s")
            session.executed.append(plan)

    monkeypatch.setattr(lvengine, "LvmThinEngine", FakeEngine)
    stalls_before_success = 2
    session = _FakeSession()
    lvengine.execute_variant(rig, rig.device(), LvmThinConfig(), 16 * MiB, "v", Plan(()), session)
    assert len(made) == 2 and len(session.executed) == 1
    assert [(k, d["attempt"]) for k, d in session.events] == [("guest_stalled", 1)]
    made.clear()
    stalls_before_success = 99
    with pytest.raises(GuestStalled):
        lvengine.execute_variant(rig, rig.device(), LvmThinConfig(), 16 * MiB, "v", Plan(()), _FakeSession())
    assert len(made) == lvengine.STALL_ATTEMPTS


def test_a_gated_plan_without_a_gate_is_refused_before_the_guest_boots(rig):
    plan = Plan((Measure(fill_job(8 * MiB), "prefill"), Measure(scatter_job(8 * MiB), "loop", 0, gate="loop")))
    engine = LvmThinEngine(rig, rig.device(), LvmThinConfig(name="t-nogate"), disk_size=8 * MiB)
    with pytest.raises(ConfigError, match="gate"):
        engine.run_plan(plan, rig.work_dir / "never")


def test_a_native_run_keeps_the_hosts_stamps_of_its_step_lines(rig, tmp_path, monkeypatch):
    """run_plan natively: the host's stamps of the script's step lines (run_script) become host_step_times and
    host_steps.txt, as a guest run's do (no device-mapper needed: the script run itself is stood in for)."""
    engine = LvmThinEngine(rig, rig.device(), LvmThinConfig(name="t-stamps"), disk_size=8 * MiB)
    engine.native = True
    engine._host_counters = lambda: {}
    ran = ScriptRun(0, 100.0, {"setup-begin": 100.5, "000-fio-begin": 101.25, "done": 103.0})
    monkeypatch.setattr(engine, "_run_native", lambda compiled, out_dir, timeout, decide: ran)
    out = tmp_path / "out"
    out.mkdir()
    engine.run_plan(Plan((Measure(scatter_job(8 * MiB), "m"),)), out)
    assert engine.host_step_times == ran.step_times
    assert (out / "host_steps.txt").read_text() == "setup-begin 0.500\n000-fio-begin 1.250\ndone 3.000\n"


# ---------------------------------------------------------------- in the guest

def _our_processes(marker: str) -> list[str]:
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmd:
                found.append(cmd.replace(b"\0", b" ").decode(errors="replace")[:120])
    return found


@pytest.mark.guest
# Pool sizing: the prefill maps the whole 8 MiB volume (128 chunks of 64 KiB, 64 of 128 KiB), then each of three
# scatters breaks up to 64 more chunks: at most 320 and 256 chunks, 2.5x and 4x the volume.
# 8 MiB, not more: the guest's checks (md5sum, busybox cmp) take about half the test's time and grow with the volume.
@pytest.mark.parametrize("chain,chunk,zeroing,pool_factor",
                         [("fan", 64 << 10, False, 3.0), ("stack", 128 << 10, True, 4.0)])
def test_integrity_chain_of_three(rig, tmp_path, monkeypatch, chain, chunk, zeroing, pool_factor):
    """Writes before and after each of 3 snapshots (fio verify), every volume checked against its point-in-time
    copy after every step (MD5) and byte for byte after each delete and at the end; then all cleaned up."""
    monkeypatch.setenv("SNAPTAX_DATA_DIR", str(tmp_path / "data"))
    size = 8 * MiB
    config = LvmThinConfig(name=f"t-{chain}", chain=chain, chunk_size=chunk, zeroing=zeroing,
                           pool_factor=pool_factor, integrity=True)
    engine = LvmThinEngine(rig, rig.device(), config, disk_size=size)
    with RunSession(rig, "lvmthin-integrity", profiles.get("smoke"), {}) as session:
        with engine:
            engine.execute(chain_plan(size), session)
            rows = read_integrity(engine.run_dir / "results")
            assert engine.chain_length == 0
            assert engine.describe()["where"] == "tcg-guest"
            # every step the guest logged was also stamped on the host's clock as its console line arrived
            steps = engine.host_step_times
            guest_steps = (engine.run_dir / "results" / "steps.txt").read_text().split("\n")
            assert set(steps) == {line.split()[0] for line in guest_steps if line.strip()}
            assert list(steps.values()) == sorted(steps.values())
            assert (engine.run_dir / "results" / "host_steps.txt").read_text().count("\n") == len(steps)
    assert rows and all(r[0] == "ok" for r in rows), [r for r in rows if r[0] != "ok"]
    checked = {(r[1], r[2], r[3]) for r in rows}
    assert ("006", "snap1", "md5") in checked or ("006", "origin", "md5") in checked
    assert sum(1 for r in rows if r[3] == "bytes") >= 5   # after the 3 deletes and at the end
    # Each snapshot's point-in-time content differs from the later live volume (the writes really happened).
    final = {r[2]: r[4] for r in rows if r[1] == "011"}
    assert len(final) == 1
    md5_at = {(r[1], r[2]): r[4] for r in rows}
    live = "origin" if chain == "fan" else "snap3"
    assert md5_at[("005", "snap3" if chain == "fan" else "snap2")] != list(final.values())[0]

    published = session.published
    assert published is not None
    record = RunRecord.load(published)
    writes = {m.index: m for m in record.measurements if m.ios("write")}
    assert sorted(writes) == [0, 2, 4, 6, 8, 11]
    assert [writes[i].chain_length for i in (0, 2, 4, 6, 8, 11)] == [0, 1, 2, 3, 2, 0]

    def broken(i: int) -> float:
        return writes[i].delta("engine.chunks_broken")

    chunk_sectors = chunk // 512
    for i in (2, 4, 6):  # the first scatter after each snapshot breaks shared chunks and copies them out
        assert 0 < broken(i) <= 64
        assert writes[i].delta("host.sectors_written") >= broken(i) * chunk_sectors
        assert writes[i].ios("write") == 64
        c = writes[i].counters
        grown = c["engine.snapshot_allocated_bytes"].after - c["engine.snapshot_allocated_bytes"].before
        assert grown == broken(i) * chunk          # every broken chunk's old copy is held by the snapshots
        assert c["guest.writes"].delta == 64
    # Same offsets again with no snapshot taken in between: nothing left to break.
    assert broken(8) == 0 and broken(11) == 0
    assert writes[0].counters["engine.snapshot_allocated_bytes"].after == 0
    for i, m in writes.items():
        assert (m.directory / "fio.json").exists()
        assert (m.directory / "job.fio").read_text().count(f"snaptax-{live}") or i < 6
    assert not _our_processes(str(rig.work_dir)), "qemu / qemu-storage-daemon left running"
    assert not (rig.rig_work_dir / "run" / f"lvmthin-{config.name}").exists()


@pytest.mark.guest
def test_the_host_ends_a_gated_loop_while_the_guest_runs(rig, tmp_path, monkeypatch):
    """The guest asks before each gated run and waits; the host's third answer closes the loop: the fourth run is
    neither asked about nor run, and the step after the loop runs."""
    monkeypatch.setenv("SNAPTAX_DATA_DIR", str(tmp_path / "data"))
    size = 8 * MiB
    plan = Plan((Measure(fill_job(size), "prefill"),
                 *(Measure(scatter_job(size, 16), "loop", k, gate="loop") for k in range(4)),
                 Measure(scatter_job(size, 16), "last")))
    asked: list[tuple[str, int]] = []

    def gate(name: str, repeat: int) -> bool:
        asked.append((name, repeat))
        return repeat < 2

    engine = LvmThinEngine(rig, rig.device(), LvmThinConfig(name="t-gate"), disk_size=size)
    with RunSession(rig, "lvmthin-gate", profiles.get("smoke"), {}) as session:
        with engine:
            engine.execute(plan, session, gate=gate)
            steps = engine.host_step_times
    assert asked == [("loop", 0), ("loop", 1), ("loop", 2)]
    assert session.published is not None
    record = RunRecord.load(session.published)
    assert [(m.phase, m.repeat) for m in record.measurements] == [("prefill", 0), ("loop", 0), ("loop", 1),
                                                                  ("last", 0)]
    # each question was answered before its run began, and the closed gate's step was told "skip"
    assert steps["001-ask"] < steps["001-told"] <= steps["001-fio-begin"]     # told and run may share a poll
    assert "003-told" in steps and "003-fio-begin" not in steps and "004-ask" not in steps
