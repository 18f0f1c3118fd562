"""The tiering analysis on synthetic tables: batch means, the consolidation window, the model at the SSD tier's
speed, and the ratio of the two pools' ratios."""
import math

import numpy as np
import pandas as pd
import pytest

from snaptax.models import tiering as tm
from snaptax.studies.tiering import analyse as an


def _seconds(pool, phase, values, t0=0.0):
    return pd.DataFrame({"pool": pool, "phase": phase, "index": 1, "t_s": t0 + np.arange(1, len(values) + 1),
                         "t_in_phase_s": np.arange(1.0, len(values) + 1), "iops": values, "ssd_share": 0.0})


def test_phase_samples_are_batch_means_without_the_first_second():
    s = _seconds("sas_pool", "initial", [999.0] + [10.0] * 3 + [20.0] * 3)
    meas = pd.DataFrame({"pool": ["sas_pool"], "phase": ["initial"], "deletion": [None]})
    np.testing.assert_allclose(an.phase_samples(s, meas, "sas_pool", "initial"), [10.0, 20.0])


def test_consolidation_is_the_seconds_between_the_commits_start_and_end():
    s = _seconds("sas_pool", "delete", [1.0] * 3 + [50.0] * 6 + [1.0] * 3, t0=100.0)
    meas = pd.DataFrame({"pool": ["sas_pool"], "phase": ["delete"],
                         "deletion": [{"t_delete_start": 103.0, "t_done": 109.0}]})
    np.testing.assert_allclose(an.phase_samples(s, meas, "sas_pool", "delete"), [50.0, 50.0])


def _phases(p_with):
    return pd.DataFrame({"pool": ["tier_pool"] * 2, "phase": ["initial", "with"], "ssd_share": [1.0, p_with],
                         "ratio_pct": [100.0, 50.0], "ratio_low": [math.nan, 45.0], "ratio_high": [math.nan, 55.0],
                         "n": [4, 4]})


def test_at_tier_speed_uses_the_tiers_own_ssd_time_and_the_fitted_hdd_time():
    p = np.linspace(0, 1, 50)
    fit = tm.fit(p, tm.iops(p, 400.0, 800.0) * (1 + 0.01 * np.sin(np.arange(50))))
    out = an.at_tier_speed(_phases(0.5), fit, {"tier_pool": {"ssd_us_per_io": 20.0}})
    row = out[out.phase == "with"].iloc[0]
    assert row.ratio_pct == pytest.approx(100 * 20.0 / (0.5 * 20.0 + 0.5 * fit.tau_hdd_us))
    assert row.ratio_low < row.ratio_pct < row.ratio_high
    # a real pool has no emulated model: the fitted τ_ssd is its own
    real = an.at_tier_speed(_phases(0.5), fit, {})
    assert real[real.phase == "with"].ratio_pct.iloc[0] == pytest.approx(
        100 * fit.tau_ssd_us / (0.5 * fit.tau_ssd_us + 0.5 * fit.tau_hdd_us))


def test_no_fit_no_ratios_at_tier_speed():
    assert an.at_tier_speed(_phases(0.5), None, {}).empty


def test_tier_over_sas_combines_both_intervals():
    phases = pd.DataFrame({"pool": ["sas_pool"], "phase": ["with"], "ratio_pct": [80.0], "ratio_low": [72.0],
                           "ratio_high": [88.0], "n": [5]})
    speed = pd.DataFrame({"phase": ["with"], "ratio_pct": [4.0], "ratio_low": [3.5], "ratio_high": [4.5], "n": [60]})
    iv = an._relative(phases, speed)
    assert iv.estimate == pytest.approx(5.0)
    assert iv.low < 5.0 < iv.high and iv.n == 5
    half = math.hypot(math.log(88 / 72) / 2, math.log(4.5 / 3.5) / 2)
    assert iv.high == pytest.approx(5.0 * math.exp(half))
