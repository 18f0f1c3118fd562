"""The plan compiled into one sh script, its gate questions, and the script run natively
(snaptax.engines.lvmthin.script)."""
from __future__ import annotations

import time

import pytest

from snaptax.engines.lvmthin import script as lvscript
from snaptax.engines.lvmthin.config import LvmThinConfig
from snaptax.engines.lvmthin.engine import LvmThinEngine
from snaptax.engines.lvmthin.script import compile_plan, gate_decider
from snaptax.errors import ConfigError, EngineError
from snaptax.plan import DeleteSnapshot, Measure, Plan, TakeSnapshot
from tests.engines.lvmthin.plans import MiB, chain_plan, fill_job, scatter_job


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
    from fractions import Fraction

    from snaptax.plan import SetCache
    with pytest.raises(ConfigError, match="no cache to resize"):
        compile_plan(Plan((TakeSnapshot(), SetCache(Fraction(1, 2)))), LvmThinConfig(), 16 * MiB, ["pv0"])


def test_a_gate_name_that_is_not_a_shell_name_is_refused():
    plan = Plan((Measure(scatter_job(8 * MiB), "loop", 0, gate="re-learn"),))
    with pytest.raises(ConfigError, match=r"steps\[0\]\.gate"):
        compile_plan(plan, LvmThinConfig(), 8 * MiB, ["pv0"])


def test_the_host_answers_only_questions_of_gated_steps_of_the_plan():
    """A tag the console garbled (no step, a step that is not a gated Measure, another gate's name) gets no answer
    (None) and never reaches the Gate; a gated step's question is asked with its repeat."""
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


def _three_gated_steps(tmp_path):
    """The script head's real `gate` function around three runs of gate `learn` (steps 001-003), natively."""
    from snaptax import paths

    in_dir, out_dir = tmp_path / "in", tmp_path / "out"
    in_dir.mkdir()
    out_dir.mkdir()
    head = lvscript._SCRIPT_HEAD % {"vg": "vg", "pvs": "", "serials": "", "pool": "pool", **lvscript.PROTOCOL}
    body = "".join(f"if gate {i:03d} learn; then echo ran > $OUT/r{i}; fi\n" for i in (1, 2, 3))
    (in_dir / "run.sh").write_text(head + body + 'step "done"\n')
    env = {"PATH": "/usr/bin:/bin", "IN": str(in_dir), "OUT": str(out_dir),
           "SNAPTAX_LIB": str(paths.REPO_ROOT / "src" / "snaptax" / "guest" / "lib.sh")}
    return in_dir, out_dir, env


def test_the_native_script_asks_the_host_through_a_pipe(tmp_path):
    """Native mode (a host with device-mapper) runs the same script head, its gate questions answered over a pipe:
    the script's own `gate` function with the host's run_script, no LVM needed for the questions themselves."""

    in_dir, out_dir, env = _three_gated_steps(tmp_path)
    asked: list[tuple[str, str]] = []

    def decide(tag: str, name: str) -> bool:
        asked.append((tag, name))
        return tag == "001"

    before = time.monotonic()
    run = lvscript.run_script(in_dir, env, out_dir / "script.log", 60, decide)
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


def test_a_garbled_answer_neither_runs_nor_closes_a_gate(tmp_path, monkeypatch):
    """Before each answer the script gets lines a serial line could garble it into: an empty, a misspelt or a
    lengthened answer, an answer under a garbled tag. It ignores them and acts on the answer that follows."""

    in_dir, out_dir, env = _three_gated_steps(tmp_path)
    real = lvscript.pipe_writer

    def garbling(proc):
        write = real(proc)

        def first_garbled(data: bytes) -> None:
            tag, other = data.split()[1], b"skip" if data.endswith(b"run\n") else b"run"
            write(b"snaptax-go " + tag + b"\nsnaptax-go " + tag + b" ru\nsnaptax-go " + tag + b" " + other + b"x\n"
                  + b"snaptax-go " + tag + b" " + other + b" " + other + b"\nsnaptax-go 0" + tag + b" " + other
                  + b"\n" + data)
        return first_garbled

    monkeypatch.setattr(lvscript, "pipe_writer", garbling)
    assert lvscript.run_script(in_dir, env, out_dir / "script.log", 60, lambda tag, name: tag == "001").rc == 0
    assert (out_dir / "r1").exists() and not (out_dir / "r2").exists() and not (out_dir / "r3").exists()
    told = [line.split()[:2] for line in (out_dir / "script.log").read_text().splitlines() if "-told" in line]
    assert told == [["snaptax-step", "001-told"], ["snaptax-step", "002-told"]]
    assert "snaptax-step 001-told run" in (out_dir / "script.log").read_text()
    assert "snaptax-step 002-told skip" in (out_dir / "script.log").read_text()


def test_a_native_script_past_its_time_is_stopped(tmp_path):
    from tests.processes import processes_mentioning
    (tmp_path / "run.sh").write_text("sleep 37.25 &\nsleep 37.5\n")     # and a child the script started
    t0 = time.monotonic()
    with pytest.raises(EngineError, match="still running"):
        lvscript.run_script(tmp_path, {"PATH": "/usr/bin:/bin"}, tmp_path / "script.log", 0.5)
    assert time.monotonic() - t0 < 10
    assert processes_mentioning("sleep\x0037.25") == [] and processes_mentioning("sleep\x0037.5") == []


def test_a_ctrl_c_just_after_a_native_script_starts_stops_it(tmp_path, monkeypatch):
    """A KeyboardInterrupt between the script's start and its wait loop (here from setting up the gate's pipe)
    stops the script and its child: nothing runs on orphaned."""
    from tests.processes import processes_mentioning
    (tmp_path / "run.sh").write_text("sleep 38.25 &\nsleep 38.5\n")

    def interrupted(proc):
        time.sleep(0.3)                                 # the script has started its children
        raise KeyboardInterrupt

    monkeypatch.setattr(lvscript, "pipe_writer", interrupted)
    with pytest.raises(KeyboardInterrupt):
        lvscript.run_script(tmp_path, {"PATH": "/usr/bin:/bin"}, tmp_path / "script.log", 60, lambda t, n: True)
    left = ["sleep\x0038.25", "sleep\x0038.5"]       # /proc's command line: arguments joined by NUL
    deadline = time.monotonic() + 5
    while any(map(processes_mentioning, left)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [processes_mentioning(t) for t in left] == [[], []]
