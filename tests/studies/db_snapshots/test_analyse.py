"""The database-snapshot analysis on synthetic runs with known costs: ratios paired by repetition, the second
snapshot's increment against the first's, the RAID5 against the SSD each on its own baseline, and the model fit
recovering its parameters."""
import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from snaptax.studies.db_snapshots import analyse as an

PAGES = 32768


def _runs(t0, tau1, tau2, device, repeats=6, noise=0.0, rng=None, replicate=0, copy_write_share=0.7):
    """Runs of known costs; the engine's 8 threads busy for the whole duration, the copies' write + commit
    `copy_write_share` of the thread-time the snapshots add (the write alone half of it)."""
    rows = []
    for r in range(repeats):
        drift = 1 + 0.05 * r                       # drift shared by a repetition's three runs
        for k in (0, 1, 2):
            t = (t0 + PAGES * (tau1 * (k >= 1) + tau2 * max(k - 1, 0))) * drift
            if noise:
                t *= 1 + noise * rng.standard_normal()
            rows.append({"device": device, "replicate": replicate, "repeat": r, "k": k, "duration_s": t,
                         "pages_first_written": PAGES if k else 0.0, "concurrency": 8.0,
                         "second_snapshot_s": 8.0 * PAGES * 2 * tau2 * (k == 2) * drift,
                         "busy_s": 8.0 * t, "copy_write_commit_s": copy_write_share * 8.0 * (t - t0 * drift),
                         # the write alone: half of write + commit
                         "copy_write_s": copy_write_share * 4.0 * (t - t0 * drift)})
    return pd.DataFrame(rows)


def test_pairing_cancels_drift_shared_by_a_repetition():
    runs = _runs(1.0, 10e-6, 5e-6, "ssd_snapshots")
    iv = an.ratio_to_baseline(runs, "ssd_snapshots", 1)
    assert iv.estimate == pytest.approx(1 + PAGES * 10e-6)
    assert iv.high - iv.low == pytest.approx(0, abs=1e-9)     # the drift cancels exactly


def test_second_over_first_is_the_ratio_of_the_increments():
    runs = _runs(1.0, 10e-6, 4e-6, "raid5_15k_6")
    assert an.second_over_first(runs, "raid5_15k_6").estimate == pytest.approx(0.4)


def test_raid5_over_ssd_divides_each_devices_own_slowdown():
    runs = pd.concat([_runs(1.0, 30e-6, 20e-6, "raid5_15k_6"), _runs(0.5, 10e-6, 5e-6, "ssd_snapshots")])
    iv = an.device_over_device(runs, 2)
    expect = (1 + PAGES * 50e-6) / (1 + PAGES * 15e-6 / 0.5)
    assert iv.estimate == pytest.approx(expect)


def test_the_model_fit_recovers_known_costs_within_its_interval():
    rng = np.random.default_rng(4)
    runs = _runs(1.8, 20e-6, 8e-6, "raid5_15k_6", repeats=10, noise=0.01, rng=rng)
    runs["duration_s"] /= 1 + 0.05 * runs.repeat         # the model has no drift term
    fits = an.fit_models(runs)
    f = fits["raid5_15k_6"]
    lo1, hi1 = f.ci95[1]
    lo2, hi2 = f.ci95[2]
    assert lo1 < 20e-6 < hi1 and lo2 < 8e-6 < hi2
    model = an.model_table(runs, fits).iloc[0]
    # c = the second snapshot's thread-seconds over the concurrency, per page: 2·τ2 here, so ω = 1 − τ2/(2·τ2)
    assert model.overlap == pytest.approx(0.5, abs=0.1)
    # with one pusher the copies' thread-seconds are wall seconds: the engine's concurrency does not divide them
    one = an.model_table(runs, fits, pushers=1).iloc[0]
    assert one.second_copy_us == pytest.approx(model.second_copy_us * runs.concurrency[runs.k == 2].mean(), rel=1e-6)
    # an engine idle most of the run (the statement's work is not engine thread-time): a mean concurrency below 1
    # does not inflate the one pusher's copy time either
    idle = runs.assign(concurrency=0.25)
    assert an.model_table(idle, fits, pushers=1).iloc[0].second_copy_us == pytest.approx(one.second_copy_us, rel=1e-6)


def test_without_runs_at_two_snapshots_there_is_no_fit():
    runs = _runs(1.0, 10e-6, 5e-6, "ssd_snapshots")
    assert an.fit_models(runs[runs.k < 2]) == {}
    assert math.isnan(an.second_over_first(runs[runs.k < 2], "ssd_snapshots").estimate)


def test_every_claim_tests_a_value_the_analysis_produces():
    runs = pd.concat([_runs(1.0, 30e-6, 20e-6, "raid5_15k_6"), _runs(0.5, 10e-6, 5e-6, "ssd_snapshots")])
    summary = an.summary_table(runs.assign(**{k: 0.0 for k in an.TIME_KEYS}, first_snapshot_s=0.0))
    assert set(summary.device) == {"raid5_15k_6", "ssd_snapshots"}
    keys = {c.value_key for c in an.claims()}
    assert keys == {"db_snapshots.ssd_snapshots.k1.ratio", "db_snapshots.raid5_15k_6.second_over_first",
                    "db_snapshots.ssd_snapshots.second_over_first", "db_snapshots.raid5_over_ssd.k2",
                    "db_snapshots.ssd_snapshots.k1.copy_write_share"}
    assert {k.removeprefix("db_snapshots.") for k in keys} <= set(an.replicate_estimates(runs))


def test_the_duration_is_a_geometric_mean_with_a_positive_interval():
    runs = _runs(1.0, 10e-6, 5e-6, "ssd_snapshots")                 # drifting 5 % per repetition
    summary = an.summary_table(runs.assign(**{k: 0.0 for k in an.TIME_KEYS}, first_snapshot_s=0.0))
    row = summary[summary.k == 0].iloc[0]
    x = runs[runs.k == 0].duration_s.to_numpy()
    assert row.duration_s == pytest.approx(math.exp(np.log(x).mean())) and row.duration_method == "log t"
    assert 0 < row.duration_low < row.duration_s < row.duration_high


def test_the_raid5_rows_of_a_run_timed_before_the_flush_fix_are_provisional():
    before, after = 1, 2          # the manifest's emulator_version (record.EMULATOR_VERSIONS), not a date
    provisional = {c.seed_label for c in an.claims(before) if c.provisional}
    assert provisional == {"C004-2a", "C004-3"}                       # the rows that read the emulated RAID5
    assert all(c.provisional == an.PROVISIONAL_RAID5 for c in an.claims(before) if c.provisional)
    assert "flush" in an.PROVISIONAL_RAID5 and "RAID5" in an.PROVISIONAL_RAID5
    assert not any(c.provisional for c in an.claims(after))
    assert not any(c.provisional for c in an.claims())                 # nothing emulated: nothing to say


def test_the_claims_values_are_over_independent_replicates():
    """One number per replicate (a fresh engine each), then a t pivot over them: replicates whose first snapshot
    costs 10, 11 and 12 µs per page give T1/T0 of 1 + P·τ1 each, the estimate their geometric mean; one replicate
    alone has no interval."""
    def three(device, t0, tau1s, tau2):
        return pd.concat([_runs(t0, tau1, tau2, device, repeats=3, replicate=i) for i, tau1 in enumerate(tau1s)])

    runs = pd.concat([three("raid5_15k_6", 1.0, (30e-6, 32e-6, 34e-6), 20e-6),
                      three("ssd_snapshots", 0.5, (10e-6, 11e-6, 12e-6), 5e-6)])
    est = an.replicate_estimates(runs)
    k1 = est["ssd_snapshots.k1.ratio"]
    expect = 100 * math.exp(np.mean([math.log(1 + PAGES * t / 0.5) for t in (10e-6, 11e-6, 12e-6)]))
    assert k1.n == 3 and k1.independent and k1.value == pytest.approx(expect)
    low, high = k1.interval(0.95)
    assert low < k1.value < high
    sof = est["ssd_snapshots.second_over_first"]
    expect_sof = np.mean([100 * 5e-6 / t for t in (10e-6, 11e-6, 12e-6)])
    assert sof.n == 3 and sof.value == pytest.approx(expect_sof)
    assert est["raid5_over_ssd.k2"].n == 3
    one = an.replicate_estimates(runs[runs.replicate == 0])["ssd_snapshots.k1.ratio"]
    assert one.n == 1 and not one.defined


def test_the_copies_share_of_the_added_time_is_per_repetition_then_over_replicates():
    """C004-4's value: the copies' write + commit over the busy thread-time the snapshots add, paired by
    repetition (the drift cancels), one mean per replicate, a t pivot over the replicates."""
    runs = pd.concat([_runs(0.5, 10e-6, 5e-6, "ssd_snapshots", repeats=3, replicate=i, copy_write_share=share)
                      for i, share in enumerate((0.6, 0.7, 0.8))])
    est = an.replicate_estimates(runs)
    k1, k2 = est["ssd_snapshots.k1.copy_write_share"], est["ssd_snapshots.k2.copy_write_share"]
    assert k1.n == 3 and k1.independent and k1.value == pytest.approx(70) and k2.value == pytest.approx(70)
    # the write alone, reported beside it the same way
    assert est["ssd_snapshots.k1.copy_write_alone_share"].value == pytest.approx(35)
    low, high = k1.interval(0.95)
    # the spread of the three replicates' shares (60, 70, 80: sd 10), t with 2 degrees of freedom
    assert (high - low) / 2 == pytest.approx(sps.t.ppf(0.975, 2) * 10 / math.sqrt(3))
    claim = next(c for c in an.claims() if c.seed_label == "C004-4")
    assert claim.direction == 1 and claim.no_effect == 50 and claim.value_key.endswith("ssd_snapshots.k1."
                                                                                      "copy_write_share")
    # a repetition whose snapshot added no busy time has no share: left out, not infinite
    flat = runs.assign(busy_s=8.0)
    assert "ssd_snapshots.k1.copy_write_share" not in an.replicate_estimates(flat)
    # one whose snapshot made the engine less busy keeps its (negative) share: dropping it would bias the mean up
    less = runs.copy()
    one = (less.replicate == 0) & (less.repeat == 0) & (less.k == 1)
    less.loc[one, "busy_s"] = less[(less.replicate == 0) & (less.repeat == 0) & (less.k == 0)].busy_s.iloc[0] - 1.0
    share = an.replicate_estimates(less)["ssd_snapshots.k1.copy_write_share"]
    assert share.n == 3 and share.value < 70 - 10


def _record_with(devices, source="ssd_source"):
    from types import SimpleNamespace
    params = SimpleNamespace(source_device=source, source_of=lambda device: source, pushers=None, iodepth=4,
                             data_files=8, statement_ns=None)
    return SimpleNamespace(parameters=lambda cls: params, manifest=SimpleNamespace(
        devices=tuple(devices), profile=SimpleNamespace(name="quick")))


def test_the_source_s_rate_without_snapshots_is_set_against_its_cap():
    record = _record_with([{"name": "ssd_source", "throttle": {"write_mb_s": 125.0}}, {"name": "ssd_snapshots"}])
    # the RAID5's runs have a source of their own (the host disk), left out like the run with a snapshot
    runs = pd.DataFrame({"device": ["ssd_snapshots"] * 4 + ["raid5_15k_6"], "k": [0, 0, 0, 1, 0],
                         "source_write_mb_s": [120.0, 124.0, 122.0, 60.0, 1800.0]})
    by_key = {v.key: v for v in an.cap_values(record, runs)}
    assert by_key["db_snapshots.source_cap_mb_s"].value == 125.0
    assert by_key["db_snapshots.k0.source_write_mb_s"].value == pytest.approx(122.0)
    assert by_key["db_snapshots.k0.source_write_of_cap"].value == pytest.approx(97.6)
    assert "125\u2009MB/s of writes" in by_key["db_snapshots.snapshot_ssd_clause"].text
    assert by_key["db_snapshots.table_clause"].text.endswith("wrote 122\u2009MB/s, 98\u2009% of its cap")


def test_a_run_whose_source_had_no_cap_has_no_share():
    record = _record_with([{"name": "ssd"}], source="ssd")
    runs = pd.DataFrame({"device": ["ssd_snapshots"] * 2, "k": [0, 0], "source_write_mb_s": [900.0, 1100.0]})
    by_key = {v.key: v for v in an.cap_values(record, runs)}
    assert math.isnan(by_key["db_snapshots.source_cap_mb_s"].value)
    assert by_key["db_snapshots.k0.source_write_mb_s"].value == pytest.approx(1000.0)
    assert math.isnan(by_key["db_snapshots.k0.source_write_of_cap"].value)
    assert "sharing the source's bandwidth" in by_key["db_snapshots.snapshot_ssd_clause"].text
    assert "set by its time budget" in by_key["db_snapshots.table_clause"].text


def test_the_source_clause_says_where_each_variant_s_data_files_were():
    from snaptax import profiles
    from snaptax.studies.db_snapshots import plan as pl
    s = pl.scale(profiles.get("quick"))
    now = pl.parameters(s, pl.SOURCE_DEVICES, pl.local_statement())
    assert now.source_of("raid5_15k_6") == "ssd" and now.source_of("ssd_snapshots") == "ssd_source"
    assert "host disk at its own rate" in an.source_clause(now)
    before = dataclasses.replace(now, source_devices=None, source_device="ssd")    # a run before 2026-12-01
    assert before.source_of("raid5_15k_6") == before.source_of("ssd_snapshots") == "ssd"
    assert an.source_clause(before) == "The source (the data files) is the rig's SSD-class device"


def test_the_pushers_clause_says_who_made_the_copies():
    from snaptax import profiles
    from snaptax.studies.db_snapshots import plan as pl
    now = pl.parameters(pl.scale(profiles.get("quick")), pl.SOURCE_DEVICES, pl.local_statement())
    assert now.pushers == pl.PUSHERS == 1
    assert an.pushers_clause(now).startswith("The copies are made one at a time")
    assert "SQL Server 2012" in an.pushers_clause(now)
    before = dataclasses.replace(now, pushers=None)                          # a run before the pusher
    assert an.pushers_clause(before).startswith(f"Every request thread made its own copies, so up to "
                                                f"{pl.IODEPTH * pl.DATA_FILES} requests copied at once")
    assert pl.engine_config().pushers == 1


def test_the_write_alone_sentence_follows_its_interval_against_half():
    from snaptax.values import Value
    key = "db_snapshots.ssd_snapshots.k1.copy_write_alone_share"
    assert "rests on counting the commit" in an.write_alone_clause(Value(key, 40.0, "%", 30.0, 45.0, 3))
    assert "more than half as well" in an.write_alone_clause(Value(key, 1366.0, "%", 961.0, 1771.0, 3))
    assert "more or less than half" in an.write_alone_clause(Value(key, 50.0, "%", 40.0, 60.0, 3))
    assert "more or less than half" in an.write_alone_clause(Value(key, math.nan, "%"))


def test_c004_4_reads_the_added_wall_time_with_the_statement_s_work_and_thread_time_before():
    from snaptax import profiles
    from snaptax.studies.db_snapshots import plan as pl
    now = pl.parameters(pl.scale(profiles.get("quick")), pl.SOURCE_DEVICES, pl.local_statement())
    assert an.added_column(now) == "duration_s"
    assert an.added_column(dataclasses.replace(now, pushers=None)) == "busy_s"
    assert an.added_column(dataclasses.replace(now, statement_ns=None)) == "busy_s"   # one pusher, no statement
    # one replicate, one repetition: the copies' 3 s of write + commit over the 4 s the snapshot added to the run
    runs = pd.DataFrame([
        {"device": "ssd_snapshots", "replicate": 0, "repeat": 0, "k": k, "duration_s": d, "busy_s": b,
         "copy_write_commit_s": c} for k, d, b, c in ((0, 10.0, 5.0, 0.0), (1, 14.0, 5.5, 3.0))])
    wall = an._copy_write_share_by_replicate(runs, "ssd_snapshots", 1, added="duration_s")
    threads = an._copy_write_share_by_replicate(runs, "ssd_snapshots", 1)
    assert float(wall.iloc[0]) == pytest.approx(75.0) and float(threads.iloc[0]) == pytest.approx(600.0)
    assert "one pusher's" in next(c for c in an.claims(None, 1, True) if c.label == "C004-4").stand_in
    assert "thread-time" in next(c for c in an.claims(None, 1, False) if c.label == "C004-4").stand_in


def test_the_statement_clause_gives_each_device_s_work_and_old_runs_had_none():
    from snaptax import profiles
    from snaptax.studies.db_snapshots import plan as pl
    now = pl.parameters(pl.scale(profiles.get("quick")), pl.SOURCE_DEVICES, pl.local_statement())
    assert "80.8\u2009µs per page with the snapshots on the RAID5" in an.statement_clause(now)
    assert "323.3\u2009µs on the SSD pair" in an.statement_clause(now)
    assert an.statement_clause(dataclasses.replace(now, statement_ns=None)).startswith("The statement did no work")
