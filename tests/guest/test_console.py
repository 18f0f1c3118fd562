"""vm.ConsoleLines: a growing console log read line by line and stamped with the host's clock (pure; no guest)."""
import time

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
