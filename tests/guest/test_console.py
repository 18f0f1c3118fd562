"""vm.ConsoleLines: a growing console log read line by line and stamped with the host's clock (pure; no guest)."""
import re
import time

import pytest

from snaptax.guest.vm import ConsoleLines


def test_lines_are_stamped_when_complete_and_steps_are_found(tmp_path):
    log = tmp_path / "console.log"
    reader = ConsoleLines(log)
    assert reader.poll() == [] and reader.step_times() == {}        # no console yet
    log.write_bytes(b"boot\r\nsnaptax-step 001-fio-begin\nhalf a li")
    t0 = time.monotonic()
    first = reader.poll()
    assert [line for _, line in first] == ["boot", "snaptax-step 001-fio-begin"]     # the partial line waits
    time.sleep(0.02)
    with open(log, "ab") as f:
        f.write(b"ne\n[  3.1] snaptax-step 001-fio-end origin\nsnaptax-step 001-fio-begin\n")
    second = reader.poll()
    assert [line for _, line in second][0] == "half a line"
    assert second[0][0] > first[0][0] >= t0 - 1
    steps = reader.step_times()
    # a step line may follow kernel output on the same console line and carry words after its tag; a repeated tag
    # keeps its first time
    assert list(steps) == ["001-fio-begin", "001-fio-end"]
    assert steps["001-fio-begin"] == first[1][0] and steps["001-fio-end"] == second[1][0]
    assert reader.seen("half a line") and not reader.seen("nothing like it")


def test_gate_answers_each_question_once_and_again_until_told():
    from snaptax.guest import vm
    written: list[bytes] = []
    decided: list[tuple[str, str]] = []
    clock = [100.0]

    def decide(tag: str, name: str) -> bool:
        decided.append((tag, name))
        return tag == "004"

    answers = vm.GateAnswers(decide, written.append, clock=lambda: clock[0])
    answers.see([(0.0, "snaptax-step 004-ask learn"), (0.0, "noise")])
    assert decided == [("004", "learn")] and written == [b"snaptax-go 004 run\n"]
    clock[0] += vm.GATE_RESEND_S - 0.1
    answers.resend()                                           # too soon to send again
    assert len(written) == 1
    clock[0] += 0.2
    answers.resend()                                           # not told yet: the answer goes again
    assert written[-1] == b"snaptax-go 004 run\n" and len(written) == 2 and answers.pending == {"004": clock[0]}
    answers.see([(0.0, "snaptax-go 004 run"), (0.0, "snaptax-step 004-told run"),
                 (0.0, "snaptax-step 005-ask learn")])
    assert written[-1] == b"snaptax-go 005 skip\n" and list(answers.pending) == ["005"]
    clock[0] += 0.5
    answers.resend()                                           # 004 was told; 005 was just sent
    assert len(written) == 3


def test_a_gate_answer_to_a_script_that_is_gone_is_dropped():
    """A write to a script that has exited (a broken pipe) raises nothing: the caller sees the exit. The question
    is still decided once, and the answer stays pending (written again, harmlessly, until then)."""
    from snaptax.guest import vm
    tried: list[bytes] = []
    clock = [5.0]

    def broken(data: bytes) -> None:
        tried.append(data)
        raise BrokenPipeError

    answers = vm.GateAnswers(lambda tag, name: True, broken, clock=lambda: clock[0])
    answers.see([(0.0, "snaptax-step 001-ask loop")])
    assert tried == [b"snaptax-go 001 run\n"]
    assert answers.answered == {"001": True} and answers.pending == {"001": 5.0}
    clock[0] += vm.GATE_RESEND_S
    answers.resend()
    assert len(tried) == 2 and answers.pending == {"001": clock[0]}


def test_a_told_line_with_another_answer_is_not_delivery():
    from snaptax.guest import vm
    written: list[bytes] = []
    answers = vm.GateAnswers(lambda tag, name: True, written.append)
    answers.see([(0.0, "snaptax-step 002-ask learn")])
    answers.see([(0.0, "snaptax-step 002-told skip"), (0.0, "snaptax-step 002-told "),
                 (0.0, "snaptax-step 002-told runs"), (0.0, "snaptax-step 001-told run")])
    assert "002" in answers.pending                          # the script did not hear "run": sent again later
    answers.see([(0.0, "snaptax-step 002-told run")])
    assert answers.pending == {} and answers.answered == {"002": True}


def test_a_question_asked_again_gets_its_answer_again_and_a_garbled_one_none():
    from snaptax.guest import vm
    written: list[bytes] = []
    decided: list[tuple[str, str]] = []

    def decide(tag: str, name: str) -> bool | None:
        decided.append((tag, name))
        return None if tag != "004" else False

    answers = vm.GateAnswers(decide, written.append, clock=lambda: 0.0)
    answers.see([(0.0, "snaptax-step 004-ask learn"), (0.0, "snaptax-step 904-ask learn")])
    assert written == [b"snaptax-go 004 skip\n"] and answers.ignored == 1 and list(answers.answered) == ["004"]
    answers.see([(0.0, "snaptax-step 004-told skip"), (0.0, "snaptax-step 004-ask learn")])
    assert written[1:] == [b"snaptax-go 004 skip\n"] and decided == [("004", "learn"), ("904", "learn")]


def test_a_later_step_line_delivers_an_answer_whose_told_line_was_lost():
    from snaptax.guest import vm
    written: list[bytes] = []
    clock = [0.0]
    answers = vm.GateAnswers(lambda tag, name: tag == "001", written.append, clock=lambda: clock[0])
    answers.see([(0.0, "snaptax-step 001-ask learn")])
    answers.see([(0.0, "snaptax-step setup-end"), (0.0, "snaptax-step 001-ask learn")])
    assert list(answers.pending) == ["001"]                    # neither says the answer arrived
    answers.see([(0.0, "snaptax-step 001-fio-begin origin")])     # only "run" leads to the step's run
    assert answers.pending == {}
    answers.see([(0.0, "snaptax-step 002-ask learn")])
    answers.see([(0.0, "snaptax-go 002 skip"), (0.0, "[ 9.1] snaptax-step 004-ask other")])
    assert list(answers.pending) == ["004"]                    # 002 went by (skipped); 004 was just asked
    clock[0] += vm.GATE_RESEND_S
    answers.resend()
    assert written == [b"snaptax-go 001 run\n", b"snaptax-go 001 run\n", b"snaptax-go 002 skip\n",
                       b"snaptax-go 004 skip\n", b"snaptax-go 004 skip\n"]


def test_echoed_answers_are_not_a_sign_of_life():
    from snaptax.guest import vm
    assert vm.is_gate_echo("snaptax-go 001 run") and vm.is_gate_echo("snapt") and vm.is_gate_echo(" \r")
    assert not vm.is_gate_echo("snaptax-step 001-told run") and not vm.is_gate_echo("x snaptax-go 001 run")


def _fake_guest(monkeypatch, tmp_path, shell: str, **config):
    """run_guest with QEMU replaced by `shell` (sh -c) on the same console and input: no guest boots."""
    from snaptax.guest import vm
    monkeypatch.setattr(vm, "qemu_argv", lambda *args: ["sh", "-c", shell])
    cfg = vm.GuestConfig(boot_timeout_s=10, xfer_mib=1, **config)
    return lambda **kw: vm.run_guest(None, [], "true", tmp_path / "out", config=cfg,  # type: ignore[arg-type]
                                     run_dir=tmp_path / "run", **kw)


def test_a_script_that_never_hears_its_answer_stalls_despite_the_echoes(monkeypatch, tmp_path):
    """A script that asks and then hears only garbage: the host resends every GATE_RESEND_S and the tty echoes each
    resend, yet the stall limit (longer than the resend interval) ends the run."""
    from snaptax.guest import vm
    run = _fake_guest(monkeypatch, tmp_path, 'echo SNAPTAX-READY; echo "snaptax-step 001-ask loop"; '
                      'while read -r line; do echo "$line"; done', stall_timeout_s=vm.GATE_RESEND_S * 1.5,
                      run_timeout_s=vm.GATE_RESEND_S * 6)
    t0 = time.monotonic()
    with pytest.raises(vm.GuestStalled) as stalled:
        run(gate=lambda tag, name: True)
    assert time.monotonic() - t0 < vm.GATE_RESEND_S * 4
    # what QEMU (here sh) was doing when the stall was declared, before it was stopped: its thread, sleeping
    assert re.search(r"qemu-system-x86_64 \(TCG guest\) \(pid \d+\):\n  \d+ 'sh' S cpu [0-9.]+s wchan ",
                     stalled.value.processes), stalled.value.processes
    console = (tmp_path / "run" / "console.log").read_text().splitlines()
    assert console.count("snaptax-go 001 run") >= 2                    # it was resent, and echoed


def test_an_error_from_the_gate_stops_qemu_in_the_callers_group(monkeypatch, tmp_path):
    from snaptax.host.procs import ProcessGroup
    from tests.processes import processes_mentioning
    run = _fake_guest(monkeypatch, tmp_path, 'echo SNAPTAX-READY; echo "snaptax-step 001-ask loop"; sleep 44.2571')

    def gate(tag: str, name: str) -> bool:
        raise RuntimeError("the gate failed")

    with ProcessGroup() as pg:
        with pytest.raises(RuntimeError, match="the gate failed"):
            run(gate=gate, pg=pg)
        assert pg.children == []                        # stopped while the caller's group lives on
        deadline = time.monotonic() + 5                 # (its SIGTERMed child may take a moment to be gone)
        while processes_mentioning("44.2571") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_mentioning("44.2571") == []
