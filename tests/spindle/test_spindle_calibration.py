"""The seek-span fit recovers known parameters from synthetic data (pure; no daemons)."""
import math

import pytest

from snaptax.spindle.predict import closed_loop
from snaptax.spindle.profiles import DiskSpec
from snaptax.spindle.rigfiles import load_profile
from snaptax.studies import calibration as cal

GiB = 1 << 30


@pytest.fixture(scope="module")
def p10k():
    return load_profile("sas10k")


def test_model_mean_service_agrees_with_simulator(p10k):
    # the analytic S(span) and the event simulator are independent implementations of the same model
    for span in (0.01, 1.0):
        sim = closed_loop(DiskSpec(p10k), GiB, qd=1, ios=6000, span=span, seed=7).mean_latency_s
        assert cal.mean_service_s(span, p10k.seek_read, p10k, GiB) == pytest.approx(sim, rel=0.03)


def test_datasheet_qd1_iops(p10k):
    # 1 / (0.2 + 3.8 + 3.0 + 0.036) ms
    assert cal.datasheet_qd1_iops(p10k) == pytest.approx(1 / 7.036e-3, rel=0.002)


def test_fit_recovers_configured_seek_figures_without_noise(p10k):
    y, se = cal.synthetic_span_data(p10k, GiB, harness_s=100e-6)
    fit = cal.fit_seek_span(cal.SPANS, y, se, p10k, GiB, harness_s=100e-6)
    assert max(fit.rel_errors(p10k.seek_read).values()) < 0.01


def test_fit_with_measurement_noise_has_honest_intervals(p10k):
    # noise of a 10 s QD1 run: rotational latency sd T_rev/√12 over ~1400 commands
    noise = p10k.t_rev_s / math.sqrt(12) / math.sqrt(1400)
    y, se = cal.synthetic_span_data(p10k, GiB, noise_s=noise, seed=3)
    fit = cal.fit_seek_span(cal.SPANS, y, se, p10k, GiB)
    truth = p10k.seek_read
    for name, ci in zip(("track_to_track_ms", "average_ms", "full_stroke_ms"), fit.ci95_ms):
        assert abs(getattr(fit, name) - getattr(truth, name)) < 3 * ci + 1e-9, name
    assert fit.rel_errors(truth)["average_ms"] < 0.05
    # a wrong model is detectable: shifting the data by 1 ms cannot be fitted with the right figures
    bad = cal.fit_seek_span(cal.SPANS, y + 1e-3, se, p10k, GiB)
    assert bad.rel_errors(truth)["average_ms"] > 0.1
