"""The tiering analysis on synthetic tables: batch means, the consolidation window, the model at the SSD tier's
speed, and the ratio of the two pools' ratios."""
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml

from snaptax.counters import CounterValue
from snaptax.errors import ConfigError
from snaptax.fio import parse_size
from snaptax.models import tiering as tm
from snaptax.spindle.profiles import to_json
from snaptax.spindle.rigfiles import SPINDLES_DIR, parse_device
from snaptax.studies.tiering import analyse as an, lvmthin, misplacement, plan as planmod, tables
from snaptax.values import Value


def _seconds(pool, phase, values, t0=0.0):
    return pd.DataFrame({"pool": pool, "phase": phase, "index": 1, "t_s": t0 + np.arange(1, len(values) + 1),
                         "t_in_phase_s": np.arange(1.0, len(values) + 1), "iops": values, "ssd_share": 0.0})


def test_phase_samples_are_batch_means_without_the_first_second():
    s = _seconds("sas_pool", "initial", [999.0] + [10.0] * 3 + [20.0] * 3)
    meas = pd.DataFrame({"pool": ["sas_pool"], "phase": ["initial"], "deletion": [None]})
    np.testing.assert_allclose(tables.phase_samples(s, meas, "sas_pool", "initial"), [10.0, 20.0])


def test_consolidation_is_the_seconds_between_the_commits_start_and_end():
    s = _seconds("sas_pool", "delete", [1.0] * 3 + [50.0] * 6 + [1.0] * 3, t0=100.0)
    meas = pd.DataFrame({"pool": ["sas_pool"], "phase": ["delete"],
                         "deletion": [{"t_delete_start": 103.0, "t_done": 109.0}]})
    np.testing.assert_allclose(tables.phase_samples(s, meas, "sas_pool", "delete"), [50.0, 50.0])


def _phases(p_with):
    return pd.DataFrame({"pool": ["tier_pool"] * 2, "phase": ["initial", "with"], "ssd_share": [1.0, p_with],
                         "ratio_pct": [100.0, 50.0], "ratio_low": [math.nan, 45.0], "ratio_high": [math.nan, 55.0],
                         "n": [4, 4]})


def test_at_tier_speed_uses_the_tiers_own_ssd_time_and_the_fitted_hdd_time():
    p = np.linspace(0, 1, 50)
    fit = tm.fit(p, tm.iops(p, 400.0, 800.0) * (1 + 0.01 * np.sin(np.arange(50))))
    out = misplacement.at_tier_speed(_phases(0.5), fit, {"tier_pool": {"ssd_us_per_io": 20.0}})
    row = out[out.phase == "with"].iloc[0]
    assert row.ratio_pct == pytest.approx(100 * 20.0 / (0.5 * 20.0 + 0.5 * fit.tau_hdd_us))
    assert row.ratio_low < row.ratio_pct < row.ratio_high
    # a real pool has no emulated model: the fitted τ_ssd is its own
    real = misplacement.at_tier_speed(_phases(0.5), fit, {})
    assert real[real.phase == "with"].ratio_pct.iloc[0] == pytest.approx(
        100 * fit.tau_ssd_us / (0.5 * fit.tau_ssd_us + 0.5 * fit.tau_hdd_us))


def test_no_fit_no_ratios_at_tier_speed():
    assert misplacement.at_tier_speed(_phases(0.5), None, {}).empty


def test_tier_over_sas_combines_both_intervals():
    phases = pd.DataFrame({"pool": ["sas_pool"], "phase": ["with"], "ratio_pct": [80.0], "ratio_low": [72.0],
                           "ratio_high": [88.0], "n": [5]})
    speed = pd.DataFrame({"pool": ["tier_pool", "tier_pool.lvmthin"], "phase": ["with"] * 2, "ratio_pct": [4.0, 9.0],
                          "ratio_low": [3.5, 8.0], "ratio_high": [4.5, 10.0], "n": [60, 60]})
    iv = an._relative(phases, speed)
    assert iv.estimate == pytest.approx(5.0)
    assert iv.low < 5.0 < iv.high and iv.n == 5
    half = math.hypot(math.log(88 / 72) / 2, math.log(4.5 / 3.5) / 2)
    assert iv.high == pytest.approx(5.0 * math.exp(half))


def test_at_tier_speed_is_per_variant_on_the_tiered_pool():
    p = np.linspace(0, 1, 50)
    fit = tm.fit(p, tm.iops(p, 400.0, 800.0) * (1 + 0.01 * np.sin(np.arange(50))))
    thin = _phases(0.25).assign(pool="tier_pool.lvmthin")
    sas = _phases(0.0).assign(pool="sas_pool.lvmthin")
    out = misplacement.at_tier_speed(pd.concat([_phases(0.5), thin, sas]), fit, {"tier_pool": {"ssd_us_per_io": 20.0}})
    assert set(out.pool) == {"tier_pool", "tier_pool.lvmthin"}
    # each variant against its own initial phase: a smaller share keeps less
    assert out[out.pool == "tier_pool.lvmthin"].ratio_pct.iloc[0] < out[out.pool == "tier_pool"].ratio_pct.iloc[0]


def _series(rows):
    return pd.DataFrame(rows, columns=["t_s", "host.reads", "host.ssd_reads"])


def test_a_guest_runs_counters_are_cut_from_the_host_series_around_it():
    h = _series([(0.0, 0, 0), (1.0, 100, 10), (2.0, 300, 110), (3.0, 500, 210), (4.0, 600, 220)])
    # the run from 1.4 s to 2.9 s lies between the samples at 1 s and 3 s (a bracket of 2 s)
    assert tables.series_delta(h, 1.4, 2.9) == {"t_s": 2.0, "host.reads": 400.0, "host.ssd_reads": 200.0}
    assert tables.series_delta(h, 1.0, 3.0) == {"t_s": 2.0, "host.reads": 400.0, "host.ssd_reads": 200.0}
    # not covered by the series: nothing (not a partial count)
    assert tables.series_delta(h, 3.5, 9.0) == {} and tables.series_delta(h, -1.0, 2.0) == {}
    assert tables.series_delta(h, math.nan, 2.0) == {}


def test_lateness_from_counter_increases_is_late_per_release_over_busy_per_request():
    c = {"emulator.released": 100.0, "emulator.release_late_s_sum": 0.5, "host.member_reads": 150.0,
         "host.member_writes": 50.0, "host.member0.busy_s": 1.0, "host.member1.busy_s": 1.0}
    assert tables.lateness_pct(c) == pytest.approx(100 * (0.5 / 100) / (2.0 / 200))
    assert math.isnan(tables.lateness_pct({"emulator.released": 0.0}))


def _lvmthin_meas(shares, cycles):
    n = len(shares)
    return pd.DataFrame({"pool": "tier_pool.lvmthin", "index": range(n), "phase": "learn", "ssd_share": shares,
                         "tier_cycles": cycles, "t_start_s": np.arange(n) * 10.0, "t_end_s": np.arange(n) * 10.0 + 9,
                         "lateness_pct": 1.0})


@pytest.mark.parametrize("events,learned", [([True], "yes"), ([False], "no"), ([False, True], "yes"), ([], "no")])
def test_learning_is_the_host_s_recorded_verdict_its_last_attempt_s(events, learned):
    """The learning gate's decision (a learn_done event per attempt) is read, never re-derived from the runs: a run
    without one is refused when it is read (record.upgrade)."""
    done = pd.DataFrame([{"pool": "tier_pool.lvmthin", "event": "learn_done", "t_s": 1.0 + i, "learned": x,
                          "seconds": 1.0} for i, x in enumerate(events)], columns=["pool", "event", "t_s", "learned",
                                                                                "seconds"])
    values = {v.key: v for v in lvmthin.lvmthin_values(_lvmthin_meas([0.1, 0.5, 0.95], [0, 1, 0]), pd.DataFrame(
        columns=["pool", "phase"]), done, pd.DataFrame(columns=["pool", "phase"]), 0.9, 0.8, {}, 6000)}
    assert values["tiering.tier_pool.lvmthin.learned"].text == learned
    assert values["tiering.tier_pool.lvmthin.relearned"].text == "n/a"
    assert values["tiering.tier_pool.lvmthin.learn_s"].value == pytest.approx(29.0)
    # nothing measured on the SAS-only pool: its values exist and are undefined
    assert math.isnan(values["tiering.sas_pool.lvmthin.with.ratio"].value)
    assert math.isnan(values["tiering.sas_pool.lvmthin.after.span_model_ratio"].value)
    assert values["tiering.predict.lvmthin_span_explains_after"].text == "n/a"


CURVE = {"fraction": [0.0, 0.5, 1.0], "ratio_pct": [100.0, 96.0, 100.0], "ratio_low": [100.0, 94.0, 98.0],
         "ratio_high": [100.0, 98.0, 102.0], "seeds": list(planmod.SPAN_MODEL_SEEDS)}


def test_the_span_models_seeds_are_counted_from_the_run():
    assert lvmthin.span_model_seeds({**CURVE, "seeds": [3, 4]}) == 2
    assert lvmthin.span_model_seeds({}) == 0                                   # no span model: no seeds


def test_the_span_model_is_read_between_its_modelled_fractions():
    assert lvmthin.span_model_ratio(CURVE, 0.25) == pytest.approx((98.0, 97.0, 99.0))
    assert lvmthin.span_model_ratio(CURVE, 0.5) == pytest.approx((96.0, 94.0, 98.0))
    assert all(math.isnan(x) for x in lvmthin.span_model_ratio(CURVE, 1.5))
    assert all(math.isnan(x) for x in lvmthin.span_model_ratio({}, 0.5))
    assert all(math.isnan(x) for x in lvmthin.span_model_ratio(CURVE, math.nan))


def _sas_lvmthin(after_ratios):
    """A SAS-pool LVM thin timeline: 6144 chunks of 64 KiB mapped, 2048 broken by the end of 'with'; the after
    phase's per-second IOPS a fraction `after_ratios` of the initial 1000."""
    meas = pd.DataFrame([
        {"pool": "sas_pool.lvmthin", "index": i, "phase": ph, "ssd_share": 0.0, "tier_cycles": 0.0,
         "t_start_s": 10.0 * i, "t_end_s": 10.0 * i + 9, "lateness_pct": 1.0, "member_ms_per_io": 2.0,
         "device_per_guest_io": 1.0, "device_ms_per_io": 8.0, "device_queue": 9.0, "guest_cpu_pct": 50.0,
         "member_busy_pct": 80.0, "member_busy_spread": 1.0, "member_hit_pct": 1.0,
         "copied_write_pct": 30.0 if ph == "after" else 0.0, "chunks_copied": 0.0,
         "chunks_broken": 2048.0 if ph == "with" else 0.0, "mapped_bytes": 6144 * 65536.0, "deletion": None}
        for i, ph in enumerate(("initial", "with", "after"))])
    rng = np.random.default_rng(3)
    seconds = pd.DataFrame([{"pool": "sas_pool.lvmthin", "phase": ph, "t_s": t, "t_in_phase_s": t + 1.0,
                             "iops": 1000 * r * (1 + 0.01 * rng.standard_normal())}
                            for ph, r in (("initial", 1.0), ("with", 0.5), ("after", after_ratios))
                            for t in range(13)])
    return meas, seconds


@pytest.mark.parametrize("after,verdict", [(0.97, "holds"), (0.75, "refuted")])
def test_the_span_explanation_holds_only_where_the_model_meets_the_measured_ratio(after, verdict):
    meas, seconds = _sas_lvmthin(after)
    phases = tables.phases_table(seconds, meas)
    assert lvmthin.remapped_fraction(meas, "sas_pool.lvmthin", 65536) == pytest.approx(1 / 3)
    layout = {"sas_pool.lvmthin": {"span_model": CURVE, "chunk_size": 65536}}
    values = {v.key: v for v in lvmthin.lvmthin_values(
        meas, phases, pd.DataFrame(columns=["pool", "event", "t_s", "learned", "seconds"]),
        pd.DataFrame(columns=["pool", "phase"]), 0.9, 0.8, layout, 6000)}
    assert values["tiering.sas_pool.lvmthin.remapped_pct"].value == pytest.approx(100 / 3)
    model = values["tiering.sas_pool.lvmthin.after.span_model_ratio"]
    assert model.value == pytest.approx(100 - 4 * 2 / 3) and model.has_interval
    assert values["tiering.sas_pool.lvmthin.after.ratio"].value == pytest.approx(100 * after, rel=0.02)
    assert values["tiering.predict.lvmthin_span_explains_after"].text == verdict
    assert values["tiering.sas_pool.lvmthin.after.device_queue"].value == 9.0
    assert values["tiering.sas_pool.lvmthin.after.copied_write_pct"].value == 30.0


def test_the_arrays_time_per_command_and_queue_follow_littles_law():
    c = {"host.reads": 800.0, "host.writes": 200.0, "host.latency_s_sum": 9.0, "t_s": 1.0,
         "host.member_reads": 1500.0, "host.member_writes": 500.0, "host.member0.busy_s": 1.0,
         "host.member1.busy_s": 3.0}
    assert tables.device_time(c) == pytest.approx({"device_ms_per_io": 9.0, "device_queue": 9.0})
    assert tables.member_ms_per_io(c) == pytest.approx(2.0)
    assert all(math.isnan(x) for x in tables.device_time({"host.reads": 5.0}).values())
    assert math.isnan(tables.member_ms_per_io({}))
    # member 1 three times as busy as member 0; no cache hits sampled: no hit share
    assert tables.member_balance(c)["member_busy_spread"] == pytest.approx(3.0)
    assert tables.member_balance({**c, "t_s": 4.0})["member_busy_pct"] == pytest.approx(50.0)   # mean 2 s of 4 s
    assert math.isnan(tables.member_balance(c)["member_hit_pct"])
    hits = {**c, "host.member0.cache_hits": 100.0, "host.member1.cache_hits": 300.0}
    assert tables.member_balance(hits)["member_hit_pct"] == pytest.approx(20.0)


def _shares(q_after, t_after):
    rows = [("tier_pool", "initial", 1.0), ("tier_pool", "with", 0.5), ("tier_pool", "after", q_after),
            ("tier_pool.lvmthin", "initial", 1.0), ("tier_pool.lvmthin", "with", 0.5),
            ("tier_pool.lvmthin", "after", t_after)]
    return pd.DataFrame(rows, columns=["pool", "phase", "ssd_share"])


@pytest.mark.parametrize("q_after,t_after,verdict", [(1.0, 0.4, "holds"), (1.0, 0.95, "refuted"),
                                                     (0.5, 0.4, "refuted")])
def test_the_prediction_that_lvremove_leaves_the_data_misplaced_can_fail(q_after, t_after, verdict):
    assert lvmthin._stays(_shares(q_after, t_after)) == verdict
    assert lvmthin._stays(_shares(q_after, t_after).iloc[:3]) == "n/a"


def test_what_if_curves_follow_the_model():
    p = np.linspace(0, 1, 50)
    fit = tm.fit(p, tm.iops(p, 400.0, 800.0) * (1 + 0.01 * np.sin(np.arange(50))))
    c = misplacement.what_if_curves(fit, 20.0)
    loss = c[c.curve == "loss_hours"]
    assert (np.diff(loss.y) > 0).all()                       # a longer cycle, a longer loss
    seed_copy_h = misplacement.SEED_DISK_BYTES / misplacement.SEED_MIGRATION_B_S / 3600
    assert np.interp(86400.0, loss.x, loss.y) == pytest.approx(12.0 + seed_copy_h, rel=0.02)
    r = c[c.curve == "ratio_pct"]
    assert r.y.iloc[-1] == pytest.approx(100.0) and r.y.iloc[0] == pytest.approx(100 * 20.0 / fit.tau_hdd_us)
    assert ((r.low <= r.y + 1e-9) & (r.y <= r.high + 1e-9)).all()
    # without a fit only the cycle curve
    assert set(misplacement.what_if_curves(None, 20.0).curve) == {"loss_hours"}


def test_a_write_that_copies_a_chunk_shows_as_a_chunk_read_the_volume_did_not_ask_for():
    def g(device_sectors_read, volume_sectors_read, writes):
        return {name: CounterValue(name, "counter", "", 0.0, after) for name, after in
                (("host.sectors_read", device_sectors_read), ("guest.sectors_read", volume_sectors_read),
                 ("guest.writes", writes))}
    chunk = 65536.0
    # 100 writes, 25 of which broke a chunk's sharing: 25 × 128 sectors read beyond the volume's own reads
    assert tables.copied_write_pct(g(10_000 + 25 * 128, 10_000, 100), chunk) == pytest.approx(25.0)
    assert tables.copied_write_pct(g(10_000, 10_000, 100), chunk) == 0.0
    assert math.isnan(tables.copied_write_pct(g(10_000, 10_000, 0), chunk))       # no writes: no share
    assert math.isnan(tables.copied_write_pct({}, chunk))


def test_the_copy_model_fitted_under_the_snapshot_predicts_the_phase_after_lvremove():
    # 6144 chunks mapped; 1536 broken by the end of settle, 3072 by the end of with, 1536 more copied after lvremove
    # (the origin's older chunks still count as shared): mean remapped shares 3/8 under the snapshot and 5/8 after
    def meas(copied_after_pct):
        return pd.DataFrame([
            {"pool": "sas_pool.lvmthin", "phase": ph, "mapped_bytes": 6144 * 65536.0, "chunks_broken": broken,
             "chunks_copied": copied, "copied_write_pct": pct}
            for ph, broken, copied, pct in (("settle", 1536.0, 1536.0, 90.0), ("with", 3072.0, 1536.0, 60.0),
                                            ("after", 0.0, 1536.0, copied_after_pct))])
    s_with, s_after = 1 - 0.08 * 3 / 8, 1 - 0.08 * (1 - 5 / 8)      # CURVE: 100 → 96 → 100 % linearly
    k = 3.0
    r_with = 100 * s_with / (1 + k * 0.2 * 0.6)
    with_ratio = Value.where_defined("x.with.ratio", r_with, r_with - 1, r_with + 1, 5, "%", 1, "")
    expected_after = 100 * s_after / (1 + k * 0.2 * 0.25)
    for after, verdict in ((expected_after, "holds"), (expected_after - 10, "refuted")):
        after_ratio = Value.where_defined("x.after.ratio", after, after - 1, after + 1, 5, "%", 1, "")
        values = {v.key: v for v in lvmthin.copy_model_values(meas(25.0), "sas_pool.lvmthin", 65536.0, CURVE,
                                                          with_ratio, after_ratio, "x", 0.8)}
        assert values["x.copy_cost"].value == pytest.approx(k)
        assert values["x.after.remapped_end_pct"].value == pytest.approx(75.0)
        assert values["x.after.copy_model_ratio"].value == pytest.approx(expected_after)
        assert values["tiering.predict.lvmthin_copies_explain_after"].text == verdict


def _manifest(spindles, capacity=16 << 30, variants=None):
    """A manifest as pool_specs reads it: the rig's devices (named as the pools, POOL_DEVICES) with their recorded
    `spindle` mapping and capacity, and each pool's spec as the run records it (by default: the spec that mapping
    gives, as measure.pool_spec records it and record.upgrade gives older runs)."""
    devices = tuple({"name": pool, "capacity_bytes": capacity, "spindle": sp} for pool, sp in spindles.items())
    if variants is None:
        variants = {pool: {"study": {"spec": to_json(parse_device(sp, "rigs/local.yaml"))}}
                    for pool, sp in spindles.items() if sp is not None}
    return SimpleNamespace(run_id="t", rig="local", rig_file="rigs/local.yaml", devices=devices, variants=variants)


POOL_DEVICES = {p: p for p in planmod.POOLS}    # the run's parameters' devices: each pool on the device of its name


def _pool_values(manifest):
    return {v.key.removeprefix("tiering.pool."): v.value
            for v in an.pool_values(an.pool_specs(manifest, POOL_DEVICES))}


def test_the_pool_set_up_values_are_the_device_specs():
    """Read against rigs/spindles/devices.yaml itself (not through the loader the analysis uses)."""
    raw = yaml.safe_load((SPINDLES_DIR / "devices.yaml").read_text())
    sas, tier = raw["sas_pool"], raw["tier_pool"]
    got = _pool_values(_manifest({"sas_pool": {"device": "sas_pool"}, "tier_pool": {"device": "tier_pool"}}))
    assert got["members"] == sas["members"] == tier["hdd"]["members"]
    assert got["strip_kib"] == parse_size(sas["stripe_unit"]) / 1024 == parse_size(tier["hdd"]["stripe_unit"]) / 1024
    assert got["ssd_fraction_pct"] == pytest.approx(100 * tier["ssd_fraction"])
    assert got["extent_mib"] == parse_size(tier["extent"]) / (1 << 20)
    assert got["cycle_s"] == float(str(tier["cycle"]).removesuffix("s"))
    assert got["heat_max_io_kib"] == parse_size(tier["heat_max_io"]) / 1024
    assert got["migration_mb_s"] == tier["migration_mb_s"]
    assert got["capacity_gib"] == 16


def test_the_pool_set_up_values_follow_the_recorded_spec_and_go_undefined_where_the_text_would_be_wrong():
    raid = {"kind": "raid5", "profile": "sas10k", "members": 6, "stripe_unit": "128K"}
    tier = {"kind": "tier", "ssd": {"kind": "raid1", "profile": "ssd_sas"}, "hdd": raid, "extent": "32M",
            "ssd_fraction": 0.2, "cycle": "60s", "heat_max_io": "32K", "migration_mb_s": 50.5}
    got = _pool_values(_manifest({"sas_pool": raid, "tier_pool": tier}))
    assert (got["members"], got["strip_kib"], got["extent_mib"], got["ssd_fraction_pct"], got["cycle_s"],
            got["heat_max_io_kib"], got["migration_mb_s"]) == (6, 128, 32, pytest.approx(20), 60, 32, 50.5)
    # a spec the run recorded for the variant wins over the rig's mapping
    recorded = to_json(parse_device({**tier, "cycle": "90s"}, "test"))
    got = _pool_values(_manifest({"sas_pool": raid, "tier_pool": tier}, variants={"tier_pool": {"spec": recorded}}))
    assert got["cycle_s"] == 90
    # ... and so does the spec the tiering study records in the variant's `study` (measure.pool_spec)
    got = _pool_values(_manifest({"sas_pool": raid, "tier_pool": tier},
                                 variants={"tier_pool": {"study": {"spec": recorded}}}))
    assert got["cycle_s"] == 90
    # a recorded spec that does not parse is an error naming the run's variant, not a blank in the paper
    with pytest.raises(ConfigError, match="variant tier_pool.*kind"):
        an.pool_specs(_manifest({"sas_pool": raid, "tier_pool": tier},
                                variants={"tier_pool": {"study": {"spec": {"kind": "ssd"}}}}), POOL_DEVICES)
    # "the same RAID5" on both pools: not so, no member count or strip to print
    got = _pool_values(_manifest({"sas_pool": {**raid, "members": 8}, "tier_pool": tier}))
    assert math.isnan(got["members"]) and math.isnan(got["strip_kib"]) and got["extent_mib"] == 32
    # no spec recorded (a real pool): nothing
    got = _pool_values(_manifest({"sas_pool": None, "tier_pool": None}))
    assert all(math.isnan(v) for k, v in got.items() if k != "capacity_gib")
