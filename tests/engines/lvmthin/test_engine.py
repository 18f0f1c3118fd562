"""The LVM thin engine: plan compilation and counter parsing (fast), and in a TCG guest an integrity run with a
chain of three snapshots created, measured and deleted (marked guest)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from snaptax import counters, profiles
from snaptax.engines.base import SnapshotEngine
from snaptax.engines.lvmthin.engine import (
    LvmThinConfig,
    LvmThinEngine,
    chunks_broken,
    compile_plan,
    host_has_device_mapper,
    parse_counters,
    read_integrity,
    stall_limit,
)
from snaptax.errors import ConfigError, EngineError
from snaptax.fio import FioJob
from snaptax.plan import DeleteSnapshot, Measure, Plan, TakeSnapshot
from snaptax.record import RunRecord, RunSession

MiB = 1 << 20


@pytest.fixture
def rig(scratch_rig):
    return scratch_rig("lvmthin", 512 * MiB)


def fill_job(size: int) -> FioJob:
    return FioJob(name="fill", rw="write", bs=64 << 10, iodepth=8, size=size, time_based=False, runtime_s=None,
                  verify="crc32c", log_avg_msec=None)


def scatter_job(size: int, ios: int = 64) -> FioJob:
    """`ios` random 4 KiB writes over the volume, verified by fio; randrepeat: the same offsets every time."""
    return FioJob(name="scatter", rw="randwrite", bs=4096, iodepth=16, size=size, time_based=False,
                  runtime_s=None, verify="crc32c", log_avg_msec=None, extra=(("number_ios", str(ios)),))


def chain_plan(size: int) -> Plan:
    steps: list = [Measure(fill_job(size), "prefill")]
    for i in range(3):
        steps += [TakeSnapshot(), Measure(scatter_job(size), "create", i)]
    steps += [DeleteSnapshot("oldest"), Measure(scatter_job(size), "delete", 0),
              DeleteSnapshot("newest"), DeleteSnapshot("newest"), Measure(scatter_job(size), "delete", 1)]
    return Plan(tuple(steps))


# ---------------------------------------------------------------- fast

def test_config_validation(rig):
    with pytest.raises(ConfigError, match="chunk_size"):
        LvmThinConfig(chunk_size=32 << 10)
    with pytest.raises(ConfigError, match="chunk_size"):
        LvmThinConfig(chunk_size=96 << 10)
    with pytest.raises(ConfigError, match="pool_factor"):
        LvmThinConfig(pool_factor=1.5)
    with pytest.raises(ConfigError, match="chain"):
        LvmThinConfig(chain="tree")
    with pytest.raises(ConfigError, match="capacity"):
        LvmThinEngine(rig, rig.device(), LvmThinConfig(), disk_size=512 * MiB)
    with pytest.raises(ConfigError, match="1 MiB"):
        LvmThinEngine(rig, rig.device(), LvmThinConfig(), disk_size=MiB + 4096)


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


def test_compile_fan_plan():
    c = compile_plan(chain_plan(16 * MiB), LvmThinConfig(chunk_size=256 << 10, zeroing=True), 16 * MiB, ["pv0"])
    s = c.script
    assert "--type thin-pool -L 32768k -c 256k -Z y" in s and "-V 16384k -T $VG/pool -n origin" in s
    assert s.count("lvm lvcreate -q -s -kn") == 3 and "-n snap3 $VG/origin" in s
    assert "lvm lvremove -q -f $VG/snap1" in s and "lvm lvremove -q -f $VG/snap3" in s
    assert [e["chain_length"] for e in c.events] == [1, 2, 3, 2, 1, 0] and c.final_chain_length == 0
    assert {i: (chain, live) for i, (_, chain, live) in c.measures.items()} == {
        0: (0, "origin"), 2: (1, "origin"), 4: (2, "origin"), 6: (3, "origin"), 8: (2, "origin"), 11: (0, "origin")}
    job = c.files["m002/job.fio"].decode()
    assert "ioengine=libaio" in job and "filename=/dev/mapper/snaptax-origin" in job and "number_ios=64" in job
    assert not [ln for ln in s.splitlines() if ln.startswith("check ")]  # no integrity checks unless asked


def test_compile_stack_plan_with_integrity():
    c = compile_plan(chain_plan(16 * MiB), LvmThinConfig(chain="stack", integrity=True), 16 * MiB, ["pv0"])
    s = c.script
    assert "-n snap1 $VG/origin" in s and "-n snap2 $VG/snap1" in s and "-n snap3 $VG/snap2" in s
    assert [live for _, _, live in c.measures.values()] == ["origin", "snap1", "snap2", "snap3", "snap3", "snap3"]
    # delete oldest removes the origin (no longer live); then the newest frozen ones
    assert [e["name"] for e in c.events if e["event"] == "delete"] == ["origin", "snap2", "snap1"]
    assert "check bytes 007 snap1 snap2 snap3" in s and "check md5 002 origin snap1" in s
    assert s.rstrip().splitlines()[-4].startswith("check bytes 011")


def test_compile_control_volume_beside_the_pool(rig):
    plan = Plan((Measure(fill_job(16 * MiB), "fill"), Measure(fill_job(16 * MiB), "raw", target="flat"),
                 TakeSnapshot(), Measure(fill_job(16 * MiB), "raw", target="flat")))
    c = compile_plan(plan, LvmThinConfig(chain="stack", control_volume=True), 16 * MiB, ["pv0"])
    assert "lvm lvcreate -q -Wn -y -L 16384k -n control $VG" in c.script
    assert {i: (chain, v) for i, (_, chain, v) in c.measures.items()} == {
        0: (0, "origin"), 1: (0, "control"), 3: (1, "control")}
    assert "filename=/dev/mapper/snaptax-control" in c.files["m003/job.fio"].decode()
    # counters of the measured volume, the pool's and the live thin volume's mapping
    assert "counters control snap1 $OUT/m003/counters_before.txt" in c.script
    with pytest.raises(ConfigError, match="no control volume"):
        compile_plan(plan, LvmThinConfig(), 16 * MiB, ["pv0"])
    sizes = [LvmThinEngine(rig, rig.device(), LvmThinConfig(control_volume=flag), disk_size=64 * MiB).pv_size
             for flag in (False, True)]
    assert sizes[1] - sizes[0] == 64 * MiB


def test_compile_rejects_bad_plans():
    with pytest.raises(ValueError, match="empty chain"):
        compile_plan(Plan((DeleteSnapshot(),)), LvmThinConfig(), 16 * MiB, ["pv0"])
    with pytest.raises(ConfigError, match="exceeds the thin volume"):
        compile_plan(Plan((Measure(fill_job(32 * MiB), "x"),)), LvmThinConfig(), 16 * MiB, ["pv0"])


COUNTERS = """pv pv0 153 0 10408 103 4193 17 51961 1702 0 904 1820 0 0 0 0 35 13
lv origin 10 0 80 1 20 0 160 2 0 3 3 0 0 0 0 0 0
pool 0 524288 thin-pool 2 112/1024 {used}/8192 - rw discard_passdown queue_if_no_space - 256
thin origin 0 524288 thin {mapped} 524287
cpu  1200 30 800 5000 70 10 40 0 0 0
"""


def test_parse_counters_and_broken_chunks():
    chunk = 64 << 10
    before = parse_counters(COUNTERS.format(used=4096, mapped=524288), chunk)
    assert before["host.writes"] == 4193 and before["host.sectors_written"] == 51961 and before["host.io_ms"] == 904
    assert before["guest.writes"] == 20 and before["guest.sectors_written"] == 160
    assert before["engine.pool_data_used_chunks"] == 4096 and before["engine.pool_transaction_id"] == 2
    assert before["engine.pool_meta_used_blocks"] == 112 and before["engine.pool_data_total_chunks"] == 8192
    assert before["engine.pool_data_percent"] == 50.0 and before["engine.pool_metadata_percent"] == 10.9375
    assert before["engine.live_mapped_sectors"] == 524288
    # the guest's CPU in seconds (ticks of 1/100 s): busy = user + nice + system + irq + softirq, idle + iowait
    assert before["guest.cpu_busy_s"] == pytest.approx(20.8) and before["guest.cpu_idle_s"] == pytest.approx(50.7)
    # the prefilled origin maps every pool chunk: nothing is held by snapshots alone
    assert before["engine.snapshot_allocated_bytes"] == 0
    assert "engine.chunks_broken" not in before        # a counter the engine keeps across the plan (execute)
    assert not any(k.endswith("chunk_sectors") for k in before)          # a constant: in describe(), not here
    # 60 new pool chunks, 10 of them new mappings (10 * 128 sectors): 50 shared chunks were broken
    after = parse_counters(COUNTERS.format(used=4156, mapped=524288 + 1280), chunk)
    assert chunks_broken(before, after, chunk) == (50, 10)
    assert after["engine.snapshot_allocated_bytes"] == 50 * chunk
    for name in after:                                                    # every name is in the catalogue
        counters.spec(name)
    assert {n for n in after if counters.kind(n) == "gauge"} == {n for n in after if n.startswith("engine.")}
    assert counters.kind("engine.chunks_broken") == "counter"
    empty = parse_counters("thin origin 0 204800 thin 0 -\npool 0 1 thin-pool 0 1/2 0/3 - rw\n", chunk)
    assert empty["engine.live_mapped_sectors"] == 0 and empty["host.writes"] == 0
    assert empty["engine.snapshot_allocated_bytes"] == 0


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
    from snaptax.engines.lvmthin import engine as lvmthin
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

    monkeypatch.setattr(lvmthin, "LvmThinEngine", FakeEngine)
    stalls_before_success = 2
    session = _FakeSession()
    lvmthin.execute_variant(rig, rig.device(), LvmThinConfig(), 16 * MiB, "v", Plan(()), session)
    assert len(made) == 2 and len(session.executed) == 1
    assert [(k, d["attempt"]) for k, d in session.events] == [("guest_stalled", 1)]
    made.clear()
    stalls_before_success = 99
    with pytest.raises(GuestStalled):
        lvmthin.execute_variant(rig, rig.device(), LvmThinConfig(), 16 * MiB, "v", Plan(()), _FakeSession())
    assert len(made) == lvmthin.STALL_ATTEMPTS


def test_a_gated_plan_without_a_gate_is_refused_before_the_guest_boots(rig):
    plan = Plan((Measure(fill_job(8 * MiB), "prefill"), Measure(scatter_job(8 * MiB), "loop", 0, gate="loop")))
    engine = LvmThinEngine(rig, rig.device(), LvmThinConfig(name="t-nogate"), disk_size=8 * MiB)
    with pytest.raises(ConfigError, match="gate"):
        engine.run_plan(plan, rig.work_dir / "never")


def test_a_gate_name_that_is_not_a_shell_name_is_refused():
    plan = Plan((Measure(scatter_job(8 * MiB), "loop", 0, gate="re-learn"),))
    with pytest.raises(ConfigError, match=r"steps\[0\]\.gate"):
        compile_plan(plan, LvmThinConfig(), 8 * MiB, ["pv0"])


def test_the_host_answers_only_questions_of_gated_steps_of_the_plan():
    """A tag the console garbled (no step, a step that is not a gated Measure, another gate's name) gets no answer
    (None) and never reaches the Gate; a gated step's question is asked with its repeat."""
    from snaptax.engines.lvmthin.engine import gate_decider
    plan = Plan((Measure(scatter_job(8 * MiB), "first"), TakeSnapshot(),
                 Measure(scatter_job(8 * MiB), "loop", 5, gate="loop")))
    asked: list[tuple[str, int]] = []

    def gate(name: str, repeat: int) -> bool:
        asked.append((name, repeat))
        return True

    decide = gate_decider(plan, gate)
    assert [decide(tag, "loop") for tag in ("000", "001", "003", "2", "0002", "999")] == [None] * 6
    assert decide("002", "lop") is None and asked == []
    assert decide("002", "loop") is True and asked == [("loop", 5)]


def test_gated_steps_compile_to_a_question_around_the_run():
    plan = Plan((Measure(scatter_job(8 * MiB), "loop", 0, gate="loop"), Measure(scatter_job(8 * MiB), "last")))
    script = compile_plan(plan, LvmThinConfig(), 8 * MiB, ["pv0"]).script
    gated = script[script.index("if gate 000 loop; then"):script.index("fi\n", script.index("if gate 000 loop"))]
    assert "fio --output-format=json" in gated and 'step "000-fio-begin' in gated
    assert "if gate 001" not in script and 'step "001-fio-begin' in script


def test_a_skipped_gated_step_skips_its_integrity_check_but_not_the_plans_last():
    plan = Plan((Measure(scatter_job(8 * MiB), "first"), Measure(scatter_job(8 * MiB), "loop", 0, gate="loop"),
                 Measure(scatter_job(8 * MiB), "loop", 1, gate="loop")))
    script = compile_plan(plan, LvmThinConfig(integrity=True), 8 * MiB, ["pv0"]).script.splitlines()
    gated = script.index("if gate 001 loop; then")
    block = script[gated:script.index("fi", gated) + 1]
    assert "    check md5 001 origin" in block and sum("check md5 001" in line for line in script) == 1
    assert "check md5 000 origin" in script                                 # an ungated step: checked as before
    last = script.index("if gate 002 loop; then")
    after = script[script.index("fi", last) + 1:]
    assert "check bytes 002 origin" in after
    assert not any("check" in line for line in script[last:script.index("fi", last)])


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


def _three_gated_steps(tmp_path):
    """The script head's real `gate` function around three runs of gate `learn` (steps 001-003), natively."""
    from snaptax import paths
    from snaptax.engines.lvmthin import engine as lvmthin

    in_dir, out_dir = tmp_path / "in", tmp_path / "out"
    in_dir.mkdir()
    out_dir.mkdir()
    head = lvmthin._SCRIPT_HEAD % {"vg": "vg", "pvs": "", "serials": "", "pool": "pool", **lvmthin.PROTOCOL}
    body = "".join(f"if gate {i:03d} learn; then echo ran > $OUT/r{i}; fi\n" for i in (1, 2, 3))
    (in_dir / "run.sh").write_text(head + body + 'step "done"\n')
    env = {"PATH": "/usr/bin:/bin", "IN": str(in_dir), "OUT": str(out_dir),
           "SNAPTAX_LIB": str(paths.REPO_ROOT / "src" / "snaptax" / "guest" / "lib.sh")}
    return in_dir, out_dir, env


def test_the_native_script_asks_the_host_through_a_pipe(tmp_path):
    """Native mode (a host with device-mapper) runs the same script head, its gate questions answered over a pipe:
    the script's own `gate` function with the host's run_script, no LVM needed for the questions themselves."""
    from snaptax.engines.lvmthin import engine as lvmthin

    in_dir, out_dir, env = _three_gated_steps(tmp_path)
    asked: list[tuple[str, str]] = []

    def decide(tag: str, name: str) -> bool:
        asked.append((tag, name))
        return tag == "001"

    before = time.monotonic()
    run = lvmthin.run_script(in_dir, env, out_dir / "script.log", 60, decide)
    assert run.rc == 0
    assert asked == [("001", "learn"), ("002", "learn")]
    assert (out_dir / "r1").exists() and not (out_dir / "r2").exists() and not (out_dir / "r3").exists()
    steps = [line.split()[0] for line in (out_dir / "steps.txt").read_text().splitlines()]
    assert steps == ["001-ask", "001-told", "002-ask", "002-told", "done"]
    # the host stamped each step line on its own clock, as it does a guest's console lines
    assert list(run.step_times) == steps
    stamps = list(run.step_times.values())
    assert before <= run.t0 <= stamps[0] and stamps == sorted(stamps) and stamps[-1] <= time.monotonic()
    assert stamps[0] < stamps[1]                            # the answer came in a later poll than the question


def test_a_native_run_keeps_the_hosts_stamps_of_its_step_lines(rig, tmp_path, monkeypatch):
    """run_plan natively: the host's stamps of the script's step lines (run_script) become host_step_times and
    host_steps.txt, as a guest run's do (no device-mapper needed: the script run itself is stood in for)."""
    from snaptax.engines.lvmthin.engine import ScriptRun
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


def test_a_garbled_answer_neither_runs_nor_closes_a_gate(tmp_path, monkeypatch):
    """Before each answer the script gets lines a serial line could garble it into: an empty, a misspelt or a
    lengthened answer, an answer under a garbled tag. It ignores them and acts on the answer that follows."""
    from snaptax.engines.lvmthin import engine as lvmthin

    in_dir, out_dir, env = _three_gated_steps(tmp_path)
    real = lvmthin.pipe_writer

    def garbling(proc):
        write = real(proc)

        def first_garbled(data: bytes) -> None:
            tag, other = data.split()[1], b"skip" if data.endswith(b"run\n") else b"run"
            write(b"snaptax-go " + tag + b"\nsnaptax-go " + tag + b" ru\nsnaptax-go " + tag + b" " + other + b"x\n"
                  + b"snaptax-go " + tag + b" " + other + b" " + other + b"\nsnaptax-go 0" + tag + b" " + other
                  + b"\n" + data)
        return first_garbled

    monkeypatch.setattr(lvmthin, "pipe_writer", garbling)
    assert lvmthin.run_script(in_dir, env, out_dir / "script.log", 60, lambda tag, name: tag == "001").rc == 0
    assert (out_dir / "r1").exists() and not (out_dir / "r2").exists() and not (out_dir / "r3").exists()
    told = [line.split()[:2] for line in (out_dir / "script.log").read_text().splitlines() if "-told" in line]
    assert told == [["snaptax-step", "001-told"], ["snaptax-step", "002-told"]]
    assert "snaptax-step 001-told run" in (out_dir / "script.log").read_text()
    assert "snaptax-step 002-told skip" in (out_dir / "script.log").read_text()


def test_a_native_script_past_its_time_is_stopped(tmp_path):
    from snaptax.engines.lvmthin import engine as lvmthin
    from tests.processes import processes_mentioning
    (tmp_path / "run.sh").write_text("sleep 37.25 &\nsleep 37.5\n")     # and a child the script started
    t0 = time.monotonic()
    with pytest.raises(EngineError, match="still running"):
        lvmthin.run_script(tmp_path, {"PATH": "/usr/bin:/bin"}, tmp_path / "script.log", 0.5)
    assert time.monotonic() - t0 < 10
    assert processes_mentioning("sleep\x0037.25") == [] and processes_mentioning("sleep\x0037.5") == []


def test_a_ctrl_c_just_after_a_native_script_starts_stops_it(tmp_path, monkeypatch):
    """A KeyboardInterrupt between the script's start and its wait loop (here from setting up the gate's pipe)
    stops the script and its child: nothing runs on orphaned."""
    from snaptax.engines.lvmthin import engine as lvmthin
    from tests.processes import processes_mentioning
    (tmp_path / "run.sh").write_text("sleep 38.25 &\nsleep 38.5\n")

    def interrupted(proc):
        time.sleep(0.3)                                 # the script has started its children
        raise KeyboardInterrupt

    monkeypatch.setattr(lvmthin, "pipe_writer", interrupted)
    with pytest.raises(KeyboardInterrupt):
        lvmthin.run_script(tmp_path, {"PATH": "/usr/bin:/bin"}, tmp_path / "script.log", 60, lambda t, n: True)
    left = ["sleep\x0038.25", "sleep\x0038.5"]       # /proc's command line: arguments joined by NUL
    deadline = time.monotonic() + 5
    while any(map(processes_mentioning, left)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [processes_mentioning(t) for t in left] == [[], []]
