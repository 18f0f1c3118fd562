"""The spindle benchmarks' arithmetic: figures over rounds, the QD1 accuracy the harness leaves, one seek fit's
figures against the profile it should recover. (The benchmarks themselves run in `make bench`.)"""
import pytest

from snaptax.bench import spindle as bench
from snaptax.models.seek import SeekFit
from snaptax.spindle.profiles import DriveProfile
from snaptax.spindle.rigfiles import load_profile


def test_over_rounds_gives_medians_and_the_spread_asked_for():
    rounds = [{"a": 1.0, "b": 10.0}, {"a": 3.0, "b": 30.0}, {"a": 2.0}]
    out = bench.over_rounds(rounds, spread=("a",))
    assert out == {"a": 2.0, "a_min": 1.0, "a_max": 3.0, "b": 20.0}   # b: the median of the rounds that have it


def test_the_harness_round_trip_explains_qd1_accuracy():
    # 7 ms of service, 150 µs round trip and 50 µs late: 7000 / 7200
    assert bench.explained_accuracy(7.0, 150.0, 50.0) == pytest.approx(7000 / 7200)
    assert bench.explained_accuracy(7.0, 0.0, 0.0) == 1.0


def test_a_fit_is_judged_against_the_profiles_read_seek_figures():
    p = load_profile(bench.PROFILE)
    assert isinstance(p, DriveProfile)
    t = p.seek_read
    fit = SeekFit(t.track_to_track_ms * 1.1, t.average_ms, t.full_stroke_ms * 0.98, (0.01, 0.02, 0.03), 40e-6, 5000)
    out = bench.seek_fit_figures(fit, p)
    assert out["seek_fit_max_rel_error"] == pytest.approx(0.1)
    assert out["seek_fit_rel_error_full_stroke"] == pytest.approx(0.02)
    assert out["seek_fit_jitter_us"] == pytest.approx(40) and out["seek_fit_requests"] == 5000


def _emulator(released, late, boundary, model):
    return {"emulator": {"released": released, "release_late_s_sum": late, "boundary_s_sum": boundary,
                         "model_s_sum": model}}


def test_plugin_accuracy_is_model_time_over_boundary_time_between_two_snapshots():
    before, after = _emulator(10, 0.001, 1.0, 0.9), _emulator(110, 0.002, 2.0, 1.8)
    acc, late = bench.plugin_accuracy(before, after)
    assert acc == pytest.approx(0.9) and late == pytest.approx(1e-5)
    assert all(x != x for x in bench.plugin_accuracy(before, before))      # no replies: nan, not a figure


def test_plugin_figures_spread_over_rounds_and_cases():
    rounds = []
    for r, worst in enumerate((0.97, 0.99)):
        row = {f"emulator_plugin_accuracy_qd{qd}_{d}": 1.0 for qd in (1, 32) for d in bench.DRIVES}
        row["emulator_plugin_accuracy_qd1_sas15k"] = worst
        row |= {"emulator_plugin_accuracy_flash_tier_qd1": 0.96 + r / 100,
                "emulator_plugin_accuracy_flash_tier_qd32": 0.95, "emulator_flash_tier_queue_share": 0.7 + r / 10}
        rounds.append(row)
    out = bench.plugin_figures(rounds)
    assert out["emulator_plugin_accuracy_qd1_min"] == 0.97 and out["emulator_plugin_accuracy_qd1_max"] == 1.0
    assert out["emulator_plugin_accuracy_qd1_sas15k"] == pytest.approx(0.98)      # the median over rounds
    assert out["emulator_plugin_accuracy_qd32"] == 1.0
    assert out["emulator_plugin_accuracy_flash_tier_min"] == 0.95
    assert out["emulator_plugin_accuracy_flash_tier"] == pytest.approx(0.955)
    share = (out["emulator_flash_tier_queue_share_min"], out["emulator_flash_tier_queue_share_max"])
    assert share == pytest.approx((0.7, 0.8))


def test_an_emulator_counter_grows_by_its_difference_and_from_nothing_where_a_snapshot_lacks_it():
    before, after = _emulator(10, 0.001, 1.0, 0.9), _emulator(110, 0.002, 2.0, 1.8)
    assert bench.emulator_delta(before, after, "released") == 100
    assert bench.emulator_delta({}, after, "model_s_sum") == pytest.approx(1.8)
    assert bench.emulator_delta(before, after, "spin_s_sum") == 0.0


def test_each_plugin_figure_keeps_its_own_digits_and_an_unknown_one_is_named():
    assert bench.plugin_digits("emulator_plugin_accuracy_qd1_sas10k") == 4
    assert bench.plugin_digits("emulator_plugin_accuracy_flash_tier_min") == 4
    assert bench.plugin_digits("emulator_flash_tier_queue_share_max") == 4
    assert bench.plugin_digits("emulator_flash_tier_spin_cpu") == 4
    assert bench.plugin_digits("emulator_plugin_late_us_qd32_nlsas7k2") == 2
    with pytest.raises(KeyError, match="emulator_plugin_lateness: no digits"):
        bench.plugin_digits("emulator_plugin_lateness")
