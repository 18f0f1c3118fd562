"""Lateness limits per device class: a measurement's class from its counters, its reference time, the flag."""
import math

import pytest

from snaptax.record import lateness


def drive(late_us: float, service_ms: float = 5.0, n: int = 100, model_s: float | None = None) -> dict[str, float]:
    """Counter increases of n commands on one member, each `service_ms` busy, released `late_us` late."""
    out = {"emulator.released": n, "emulator.release_late_s_sum": n * late_us * 1e-6,
           "host.member0.busy_s": n * service_ms * 1e-3, "host.member_reads": n}
    if model_s is not None:
        out["emulator.model_s_sum"] = n * model_s
    return out


def test_a_mechanical_drive_is_held_to_two_per_cent_of_its_service_time():
    assert lateness.device_class(drive(50)) is lateness.MECHANICAL
    assert not lateness.flagged(drive(99))                    # 99 µs on 5 ms: 1.98 %
    assert lateness.flagged(drive(101))
    assert lateness.lateness_share(drive(100)) == pytest.approx(0.02)
    # a long queue makes commands take longer, not the drive's service: the limit stays 2 % of the service time
    assert lateness.flagged(drive(101, model_s=0.2))


def test_flash_is_held_to_five_per_cent_of_the_command_time():
    # an SSD member: 20 µs busy per command (8 channels), each command 180 µs in the model
    ssd = drive(8.9, service_ms=0.02, model_s=180e-6)
    assert lateness.device_class(ssd) is lateness.FLASH
    assert lateness.lateness_fraction(ssd) == pytest.approx(8.9 / 20)     # what studies print: 44 % of service
    assert lateness.lateness_share(ssd) == pytest.approx(8.9 / 180)
    assert not lateness.flagged(ssd)
    assert lateness.flagged(drive(9.1, service_ms=0.02, model_s=180e-6))


def test_without_the_model_time_a_fast_device_is_judged_as_before():
    old = drive(8.9, service_ms=0.02)                       # the Python plugin's counters: no model_s_sum
    assert lateness.device_class(old) is lateness.MECHANICAL and lateness.flagged(old)


def test_not_emulated_is_never_flagged():
    assert lateness.device_class({}) is None and not lateness.flagged({})
    assert math.isnan(lateness.lateness_share({"emulator.released": 0, "emulator.release_late_s_sum": 0}))
    assert "mechanical 2 %" in lateness.limits_text() and "flash 5 %" in lateness.limits_text()
