"""The memory-dump analysis on synthetic runs whose dump times follow a known model exactly (with a known spread
between the passes): per-point means with 95 % intervals, per-GiB times, ratios, fits recovering the parameters,
predictions of the seed's timings, values and verdicts."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from snaptax import profiles
from snaptax.models import memory_dump as md
from snaptax.operatingpoints import UsedPoint
from snaptax.paper import macros
from snaptax.plan import split_replicate
from snaptax.record import RunRecord
from snaptax.studies.memory_dump import analyse as an, plan as planmod
from tests.synthetic import fio_result, write_run

MiB, GiB = 1 << 20, 1 << 30
DEVICE = {"ssd": (0.5e-3, 300 * MiB), "raid1_10k": (6e-3, 140 * MiB)}   # s0 (s), bw (bytes/s)


def make_run(tmp_path, profile="quick", noise=0.01, model="after", zero_fraction=None, **extra):
    """A published run: every dump time from `model` with the role's DEVICE parameters, × (1 ± noise) in
    alternate replicates (+ in replicates 0 and 2, − in 1); zero_fraction: the skipping walker measured at that
    inferred share (recorded as the run's operating point)."""
    p = profiles.get(profile)
    study = planmod.build_plan(p, zero_fraction=zero_fraction)
    points = [(vp.variant, i, m, 0) for vp in study.variants for i, m, _ in vp.plan.measurements()]

    def measured(variant, index, step, chain):
        role, replicate = split_replicate(variant)
        s0, bw = DEVICE[role]
        pt = planmod.point_of(step.job)
        # the overlapped walker follows its own model (its wait runs from each write's start)
        kind = "overlap" if step.phase == planmod.OVERLAP_PHASE else model
        t = float(md.dump_time_s(kind, step.job.size, pt.block_bytes, pt.wait_s, s0_s=s0, bw_bytes_s=bw,
                                 **(extra if kind == model else {})))
        t *= 1 + noise * (1 if replicate % 2 == 0 else -1)
        n = step.job.size // step.job.bs
        return fio_result(step.job.name, write_iops=n / t, runtime_s=t), {}, {}, {}

    used = () if zero_fraction is None else (UsedPoint(
        planmod.STAND_IN, zero_fraction, zero_fraction - 0.01, zero_fraction + 0.01, "memory_dump/earlier",
        planmod.realised_zero_fraction(planmod.scale(p), zero_fraction)),)
    params = planmod.parameters(p, {"ssd": "ssd", "raid1_10k": "raid1_10k"}, used).to_json()
    return RunRecord.load(write_run(tmp_path, planmod.STUDY, profile, params, points, measured))


def exact(role, point, memory, model="after", **extra):
    s0, bw = DEVICE[role]
    return float(md.dump_time_s(model, memory, point.block_bytes, point.wait_s, s0_s=s0, bw_bytes_s=bw, **extra))


def test_per_point_means_intervals_and_ratios(quick_analysis):
    a = quick_analysis
    s = planmod.scale(profiles.get("quick"))
    assert len(a.meas) == (2 * s.repeats * (16 + s.tuned_repeats - 1) + s.extra_replicates * (1 + s.tuned_repeats))
    assert len(a.summary) == 32
    row = a.summary[(a.summary.role == "raid1_10k") & (a.summary.label == "p64-w25")].iloc[0]
    t = exact("raid1_10k", planmod.DEFAULT, s.memory_bytes)
    runs = [t * (1.01 if r % 2 == 0 else 0.99) for r in range(s.repeats + s.extra_replicates)]
    gm = math.exp(np.log(runs).mean())
    assert row.n == len(runs) and row.dump_s == pytest.approx(gm, rel=1e-3)      # runtime_ms: whole milliseconds
    # the replicates at t(1 ± 1 %): the geometric mean with the log-t interval G·exp(±t(n−1)·sd(log)/√n)
    half = sps.t.ppf(0.975, len(runs) - 1) * np.std(np.log(runs), ddof=1) / math.sqrt(len(runs))
    assert row.dump_s_method == "log t" and row.dump_s_low > 0
    assert row.dump_s_high / row.dump_s == pytest.approx(math.exp(half), rel=1e-3)
    assert row.dump_s / row.dump_s_low == pytest.approx(math.exp(half), rel=1e-3)
    assert row.s_per_gib == pytest.approx(gm * GiB / s.memory_bytes, rel=1e-3)
    assert row.estimate_s == pytest.approx(1024 * 0.025) and row.vs_estimate == pytest.approx(gm / 25.6, rel=1e-3)
    assert row.to_default == pytest.approx(1.0)
    tuned = a.summary[(a.summary.role == "raid1_10k") & (a.summary.label == "p2048-w2")].iloc[0]
    ratio = exact("raid1_10k", planmod.TUNED, s.memory_bytes) / t
    # the noise is the same sign for both points of a pass: the paired ratio has no spread at all
    assert tuned.to_default == pytest.approx(ratio, rel=1e-3)
    # the tuned point's further runs count in its time (not in the pairs with the default)
    assert tuned.n == s.tuned_repeats * (s.repeats + s.extra_replicates)
    claim = a.value("memory_dump.tuned_ratio.raid1_10k")
    assert claim.n == s.repeats + s.extra_replicates and claim.independent     # one ratio per replicate
    assert tuned.to_default_high - tuned.to_default_low < 1e-3
    zero = a.summary[a.summary.wait_ms == 0]
    assert zero.vs_estimate.isna().all() and (zero.busy == 1.0).all()


def test_fits_recover_the_device_and_the_seed_predictions(quick_analysis):
    a = quick_analysis
    for role, (s0, bw) in DEVICE.items():
        f = a.fits[role]["after"]
        assert f.params["s0_ms"] == pytest.approx(s0 * 1e3, rel=0.05, abs=0.05)
        assert f.params["bw_mib_s"] == pytest.approx(bw / MiB, rel=0.05)
        assert f.ci95["s0_ms"][0] <= s0 * 1e3 <= f.ci95["s0_ms"][1]
        assert f.ci95["bw_mib_s"][0] <= bw / MiB <= f.ci95["bw_mib_s"][1]
        assert set(a.fits[role]) == set(md.MODELS)
        d = md.delta_aic(a.fits[role])
        assert d["overlap"] > 10 and min(d.values()) == 0
        assert abs(a.fits[role]["oversleep"].params["delta_ms"]) < 0.3
        assert abs(a.fits[role]["zero_skip"].params["z"]) < 0.02
    p = a.predictions
    row = p[(p.role == "raid1_10k") & (p.model == "after") & (p.setting == "default")].iloc[0]
    truth = exact("raid1_10k", planmod.DEFAULT, 4 * GiB)
    assert row.predicted_s == pytest.approx(truth, rel=0.01) and row.low < truth < row.high
    assert row.to_seed == pytest.approx(row.predicted_s / 333.95)
    seed = a.seed_table().set_index("role")
    s_default = (6e-3 + 256 * 1024 / (140 * MiB)) * 1e3
    assert seed.loc["raid1_10k", "implied_delta_ms"] == pytest.approx(333.95 / 16384 * 1e3 - s_default - 25, abs=0.1)
    assert 0 < seed.loc["raid1_10k", "implied_z"] < 1
    assert set(a.models_table().model) == set(md.MODELS)
    c = a.curve[(a.curve.role == "ssd") & (a.curve.duty == 1.0)]
    assert (c.wait_ms == 0).all() and c.dump_4gib_s.is_monotonic_decreasing


def test_overlap_data_are_told_apart(tmp_path):
    a = an.analyse(make_run(tmp_path, model="overlap"))
    for role in DEVICE:
        d = md.delta_aic(a.fits[role])
        assert d["overlap"] == 0 and d["after"] > 10
    assert a.value("memory_dump.best_model.raid1_10k").text == "overlap"


def test_values_and_claims(tmp_path):
    # three replicates give t(2) = 4.3: a verdict needs the emulated mirror's small spread (±0.2 % here)
    a = an.analyse(make_run(tmp_path, noise=0.002))
    keys = {v.key for v in a.values}
    assert all(k.startswith("memory_dump.") for k in keys)
    for k in ("memory_dump.dump_s.raid1_10k.p64-w25", "memory_dump.s_per_gib.ssd.p2048-w2",
              "memory_dump.seed_memory_s.raid1_10k.p64-w25", "memory_dump.vs_estimate.raid1_10k.p64-w25",
              "memory_dump.to_default.ssd.p2048-w2", "memory_dump.fit.raid1_10k.after.s0_ms",
              "memory_dump.fit.ssd.oversleep.delta_ms", "memory_dump.fit.ssd.zero_skip.z",
              "memory_dump.predict.raid1_10k.after.default_s", "memory_dump.predict.ssd.overlap.tuned_s",
              "memory_dump.tuned_ratio.raid1_10k", "memory_dump.seed.after_s0_ms", "memory_dump.best_model.ssd"):
        assert k in keys, k
    assert "memory_dump.vs_estimate.ssd.p64-w0" not in keys      # no estimate without a wait
    assert a.value("memory_dump.seed.after_s0_ms").value < 0    # the seed's two timings defeat `after`
    assert a.value("memory_dump.seed.iteration_ms.default").value == pytest.approx(20.38, abs=0.01)
    assert a.value("memory_dump.memory_mib").value == 256
    r = a.derived_values()                                  # serialisable (no NaN in JSON), no key given twice
    text = macros.render_tex(r.values.values())
    assert "memory_dump.fit.raid1_10k.after.bw_mib_s" in text
    import json
    json.dumps(r.to_json(), allow_nan=False)
    outcomes = {o.claim.id: o for o in a.outcomes}
    assert set(outcomes) == {"memory_dump.default_4gib", "memory_dump.tuned_4gib", "memory_dump.vs_estimate",
                             "memory_dump.tuned_ratio", "memory_dump.scales_with_memory"}
    s = planmod.scale(profiles.get("quick"))
    default_4gib = exact("raid1_10k", planmod.DEFAULT, s.memory_bytes) * 4 * GiB / s.memory_bytes
    o = outcomes["memory_dump.default_4gib"]
    assert o.ours.value == pytest.approx(default_4gib, rel=2e-3) and o.ours.n == 3
    # 16384 × (7.8 + 25) ms ≈ 537 s: above the band and on the other side of the estimate (409.6 s) than the seed
    assert default_4gib > 333.95 + o.claim.tolerance and o.verdict == "differs"
    assert o.claim.no_effect == pytest.approx(409.6)
    # the stand-in writes 8 MiB much faster than the seed's array: the tuned dump is shorter, still device-bound
    assert outcomes["memory_dump.tuned_4gib"].verdict == "differs"
    # every block is written and every wait waited: measured ÷ estimate > 1, the seed's 0.82 < 1
    assert outcomes["memory_dump.vs_estimate"].ours.value > 1 and outcomes["memory_dump.vs_estimate"].verdict == \
        "differs"
    assert outcomes["memory_dump.vs_estimate"].claim.published == pytest.approx(333.95 / 409.6)
    t = outcomes["memory_dump.tuned_ratio"]
    assert t.claim.published == pytest.approx(83.881 / 333.95)
    assert t.ours.value < 1 and t.verdict in ("agrees", "differs", "inconclusive")
    assert len(a.outcomes_table()) == 5


def test_a_single_pass_gives_no_intervals_and_inconclusive_verdicts(tmp_path):
    import dataclasses

    p = profiles.get("quick")
    one = dataclasses.replace(planmod.SCALES["quick"], repeats=1, tuned_repeats=1, extra_replicates=0)
    old = planmod.SCALES["quick"]
    planmod.SCALES["quick"] = one
    try:
        a = an.analyse(make_run(tmp_path))
    finally:
        planmod.SCALES["quick"] = old
    assert p.name == "quick"
    assert (a.summary.n == 1).all() and a.summary.dump_s_low.isna().all()
    assert all(o.verdict == "not judged" for o in a.outcomes)
    assert not a.value("memory_dump.dump_s.ssd.p64-w25").has_interval


def test_point_labels_round_trip_and_bad_runs_are_refused(tmp_path):
    for p in planmod.scale(profiles.get("quick")).points():
        assert an.point_from_label(p.label) == p
    assert an.point_from_label("p64-w2p5") == md.WalkerPoint(64, 2.5)


# ------------------------------------------------------------------ the guest phase

PROBE_IDLE = 1000.0                          # guest probe pages/s without a dump
PROBE_DURING = {"background-snapshot": 600.0, "precopy": 900.0}


def guest_doc(profile="smoke", bg_s=2.0, jitter=0.05):
    """A guest_dump.json as measure.guest_phase writes it: planned dumps from the plan, each dump after its 2 s
    baseline, a precopy dump taking exactly bytes/bandwidth, the probe at PROBE_IDLE pages/s except during a dump,
    status lines every 0.25 s. Dump times alternate by ±jitter between passes."""
    p = profiles.get(profile)
    g = planmod.guest_scale(p)
    planned = planmod.guest_dumps(p)
    ram = g.memory_mib * MiB
    sent = int(0.9 * ram)
    t, dumps, windows = 12.0, [], []
    for d in planned:
        t += planmod.GUEST_BASELINE_S
        base = bg_s if d.bandwidth_bytes_s is None else sent / d.bandwidth_bytes_s
        dur = base * (1 + jitter * (1 if d.repeat % 2 == 0 else -1))
        dumps.append({"request": {"method": d.method, "bandwidth_bytes_s": int(d.bandwidth_bytes_s or 1 << 40),
                                  "baseline_s": planmod.GUEST_BASELINE_S, "label": d.label},
                      "start_s": t, "end_s": t + dur, "qemu_total_ms": dur * 1e3, "downtime_ms": 20,
                      "transferred_bytes": sent, "file_bytes": sent + 4096, "ram_total_bytes": ram,
                      "dirty_sync_count": 3 if d.method == "precopy" else 0, "status": "completed", "dump_s": dur,
                      "zero_pages": 20_000, "normal_pages": 80_000})
        windows.append((t, t + dur, PROBE_DURING[d.method]))
        t += dur
    samples, pages, dirty, now, step = [], 0.0, 0.0, 10.0, 0.25
    while now < t + 1:
        rate = next((r for a, b, r in windows if a < now + step / 2 <= b), PROBE_IDLE)   # mid-interval
        pages += rate * step
        dirty += planmod.GUEST_DIRTY_PAGES_S * step
        now += step
        samples += [{"t": now, "job": "probe", "pages": pages, "runtime_s": now - 10.0},
                    {"t": now, "job": "dirty", "pages": dirty, "runtime_s": now - 10.0}]
    return {"memory_mib": g.memory_mib, "dirtier": {"fill_mib": g.fill_mib, "dirty_pages_s": 256, "probe_kib": 1024,
                                                    "report_s": step},
            "dumps": dumps, "samples": samples, "boot_to_start_s": 9.0, "wall_s": t + 1, "background_snapshot": True,
            "note": "accepted", "meminfo": {}, "planned": [
                {"method": d.method, "label": d.label, "repeat": d.repeat,
                 "point": None if d.point is None else [d.point.block_pages, d.point.wait_ms],
                 "bandwidth_bytes_s": d.bandwidth_bytes_s} for d in planned]}


def make_guest_run(tmp_path, profile="smoke", **kw):
    import json
    rec = make_run(tmp_path, profile)
    (rec.path / planmod.GUEST_FILE).write_text(json.dumps(guest_doc(profile, **kw)))
    return RunRecord.load(rec.path)


def test_a_run_without_a_guest_phase_still_analyses(smoke_analysis):
    a = smoke_analysis
    assert a.guest.empty and a.guest_summary.empty
    assert not [v for v in a.values if v.key.startswith("memory_dump.guest.")]


def test_guest_dumps_times_rates_and_slowdown(smoke_guest_analysis):
    a = smoke_guest_analysis
    g = a.guest
    assert len(g) == len(planmod.guest_dumps(profiles.get("smoke")))
    bg = g[g.method == "background-snapshot"]
    assert bg.dump_s.to_numpy() == pytest.approx([2.1, 1.9])
    # the probe's rate inside each window, from its status lines (0.25 s apart: exact for a constant rate)
    assert bg.slowdown.to_numpy() == pytest.approx([0.6, 0.6], rel=0.02)
    assert g.probe_before.to_numpy() == pytest.approx(PROBE_IDLE, rel=1e-6)
    assert g.dirty_before.to_numpy() == pytest.approx(256, rel=1e-6)
    s = a.guest_summary.set_index("label")
    ram = 384 * MiB
    # geometric means of the two dumps, 2.1 and 1.9 s
    assert s.loc["background", "dump_s"] == pytest.approx(math.sqrt(2.1 * 1.9))
    assert s.loc["background", "s_per_gib"] == pytest.approx(math.sqrt(2.1 * 1.9) * GiB / ram)
    assert a.value("memory_dump.guest.dump_s.background").method == "log t"
    assert s.loc["background", "slowdown"] == pytest.approx(0.6, rel=0.02)
    # two dumps of nearly the same slowdown: a narrow interval around their mean, both ends near 0.6
    bg_s = s.loc["background"]
    assert bg_s.slowdown_low <= bg_s.slowdown <= bg_s.slowdown_high
    assert (bg_s.slowdown_low, bg_s.slowdown_high) == pytest.approx((0.6, 0.6), rel=0.05)
    # precopy took bytes / bandwidth (× 1 ± jitter): over the bandwidth model, the geometric mean of the two dumps
    pre = s.loc["precopy-p2048-w2"]
    assert pre.to_bw == pytest.approx(math.sqrt(1.05 * 0.95), rel=1e-6) and pre.slowdown == pytest.approx(0.9, rel=0.02)
    assert pre.passes == 3 and pre.point == "p2048-w2"
    # beside the page-walker at the same point on the ssd role, and its fitted `after` model for the guest's RAM
    walker = a.summary[(a.summary.role == "ssd") & (a.summary.label == "p2048-w2")].iloc[0]
    assert pre.walker_s_per_gib == pytest.approx(a.meas[(a.meas.role == "ssd") & (a.meas.label == "p2048-w2")]
                                                 .s_per_gib.mean())
    # a ratio of arithmetic means (stats.ratio_of_means_interval), beside the guest's geometric mean
    guest_mean = g[g.label == "precopy-p2048-w2"].s_per_gib.mean()
    assert pre.to_walker == pytest.approx(guest_mean / pre.walker_s_per_gib)
    assert walker.s_per_gib > 0
    t_fit = exact("ssd", planmod.TUNED, ram)
    assert pre.predict_fit_s == pytest.approx(t_fit, rel=0.02) and pre.to_fit == pytest.approx(pre.dump_s / t_fit,
                                                                                                   rel=0.02)
    # the unthrottled snapshot stands beside the walker's fastest point (2048 pages, no wait)
    assert s.loc["background", "point"] == "p2048-w0"


def test_guest_values_for_the_paper(smoke_guest_analysis):
    a = smoke_guest_analysis
    v = {x.key: x for x in a.values}
    k = "memory_dump.guest"
    assert v[f"{k}.background_works"].text == "yes" and v[f"{k}.memory_mib"].value == 384
    d = v[f"{k}.dump_s.background"]
    assert d.n == 2 and d.has_interval and d.low < 2.0 < d.high
    assert v[f"{k}.slowdown.background"].value == pytest.approx(0.6, rel=0.02)
    for key in ("bandwidth_mib_s", "predict_bw_s", "to_bw", "walker_s_per_gib", "to_walker", "predict_fit_s",
                "to_fit", "passes", "rate_mib_s", "s_per_gib", "file_per_ram"):
        assert f"{k}.{key}.precopy-p2048-w2" in v, key
    assert f"{k}.bandwidth_mib_s.background" not in v      # unthrottled: no limit to quote
    # QEMU's zero pages over all pages its dumps sent (issue 46.5): 20,000 of 100,000 in every dump
    assert v[f"{k}.zero_pct"].value == pytest.approx(20.0) and v[f"{k}.zero_pct"].n == len(a.guest)
    macros.render_tex(a.values)                               # every key is a valid TeX macro name


def test_the_overlapped_walker_and_the_zero_fraction_the_seed_needs(quick_analysis):
    """The overlapped walker's values (issue 46.5), over the replicates: its time ÷ its own waits n·w (max(s, w) / w:
    1 where the write is shorter than the wait, the ±1 % noise aside) and ÷ the grid walker's in the same replicate
    (max(s, w) / (s + w)); the zero-block share the seed's default timing needs, z = 1 − 333.95 s / T(4 GiB), its
    interval T's transformed (z rises with T); the grid's fits never read the overlapped walker's runs."""
    a = quick_analysis
    v = {x.key: x for x in a.values}
    s = planmod.scale(profiles.get("quick"))
    s0, bw = DEVICE["raid1_10k"]
    sd, st = s0 + planmod.DEFAULT.block_bytes / bw, s0 + planmod.TUNED.block_bytes / bw
    assert sd < planmod.DEFAULT.wait_s and st > planmod.TUNED.wait_s
    assert v["memory_dump.overlap_walker.vs_estimate.raid1_10k.p64-w25"].value == pytest.approx(1.0, abs=0.011)
    to_after = v["memory_dump.overlap_walker.to_after.raid1_10k.p64-w25"]
    assert to_after.value == pytest.approx(planmod.DEFAULT.wait_s / (sd + planmod.DEFAULT.wait_s), rel=2e-3)
    assert v["memory_dump.overlap_walker.to_after.raid1_10k.p2048-w2"].value == pytest.approx(
        st / (st + planmod.TUNED.wait_s), rel=2e-3)
    assert to_after.n == s.repeats and to_after.low < to_after.value < to_after.high
    t = v["memory_dump.seed_memory_s.raid1_10k.p64-w25"]
    z = v["memory_dump.implied.zero_fraction.raid1_10k"]
    assert z.value == pytest.approx(1 - an.SEED_DEFAULT_S / t.value)
    assert (z.low, z.high) == pytest.approx((1 - an.SEED_DEFAULT_S / t.low, 1 - an.SEED_DEFAULT_S / t.high))
    assert 0 < z.low < z.value < z.high < 1
    assert len(a.meas) == len(an.measurements(a.record)) and (a.meas.label.isin(["p64-w25", "p2048-w2"])).any()
    # two overlapped runs in every pass on the array (not in the extra replicates: no claim reads them), none on the
    # ssd
    ov = an.measurements(a.record, planmod.OVERLAP_PHASE)
    assert len(ov) == 2 * s.repeats and set(ov.role) == {"raid1_10k"}
    assert not [k for k in v if k.startswith("memory_dump.overlap_walker.") and ".ssd." in k]


def test_the_skipping_walker_is_the_claims_stand_in_at_its_inferred_share(tmp_path, quick_analysis):
    """The skipping walker (issue 46.5) over the memory less its inferred zero share: its time scaled by the whole
    memory (as the seed's whole VM is timed), over the replicates (its passes and the extra one); its vs_estimate
    against the whole memory's n·w; its tuned ratio the grid walker's (a fixed share shortens both settings alike:
    the same bytes are skipped at both block sizes); the share it realised; and the claims read it. A run without
    it keeps the grid walker's values in the claims."""
    z = 0.36
    a = an.analyse(make_run(tmp_path, zero_fraction=z))
    v = {x.key: x for x in a.values}
    s = planmod.scale(profiles.get("quick"))
    kept = planmod.kept_bytes(s.memory_bytes, z, planmod.TUNED.block_bytes)
    assert kept == 160 * MiB and v["memory_dump.skip_walker.zero_fraction"].value == pytest.approx(0.375)
    k = "memory_dump.skip_walker"
    for p in (planmod.DEFAULT, planmod.TUNED):
        t = v[f"{k}.seed_memory_s.raid1_10k.{p.label}"]
        # the replicates at ×1.01, ×0.99, ×1.01: their geometric mean is 1.0033 of the exact time
        assert t.value == pytest.approx(exact("raid1_10k", p, kept) * planmod.SEED_MEMORY / s.memory_bytes, rel=5e-3)
        assert t.n == s.repeats + s.extra_replicates and t.low < t.value < t.high
    n = s.memory_bytes // planmod.DEFAULT.block_bytes
    assert v[f"{k}.vs_estimate.raid1_10k.p64-w25"].value == pytest.approx(
        exact("raid1_10k", planmod.DEFAULT, kept) / (n * planmod.DEFAULT.wait_s), rel=5e-3)
    assert v[f"{k}.tuned_ratio.raid1_10k"].value == pytest.approx(
        v["memory_dump.tuned_ratio.raid1_10k"].value, rel=2e-3)
    assert not [x for x in v if x.startswith(f"{k}.") and ".ssd." in x]
    read = {o.claim.id: o.claim.value_key for o in a.outcomes}
    assert read["memory_dump.default_4gib"] == f"{k}.seed_memory_s.raid1_10k.p64-w25"
    assert read["memory_dump.tuned_ratio"] == f"{k}.tuned_ratio.raid1_10k"
    # the grid's fits never read the skipping walker's runs: the same as a run without it
    plain = quick_analysis
    assert a.fits["raid1_10k"]["after"].params == pytest.approx(plain.fits["raid1_10k"]["after"].params)
    assert {o.claim.value_key for o in plain.outcomes} == {
        "memory_dump.seed_memory_s.raid1_10k.p64-w25", "memory_dump.seed_memory_s.raid1_10k.p2048-w2",
        "memory_dump.vs_estimate.raid1_10k.p64-w25", "memory_dump.tuned_ratio.raid1_10k",
        "memory_dump.scaling.raid1_10k"}
    assert not [x for x in {y.key for y in plain.values} if x.startswith(f"{k}.")]
    # the walkers side by side: every block (both roles), the overlapped and the skipping one (the mirror only)
    w = a.walkers_table()
    assert list(w.walker.value_counts().sort_index().items()) == [
        ("skips the inferred zero share", 2), ("wait from each write's start", 2), ("writes every block", 4)]
    row = w[(w.walker == "skips the inferred zero share") & (w.setting == "default")].iloc[0]
    assert (row.role, row.point, row.seed_s) == ("raid1_10k", "p64-w25", an.SEED_DEFAULT_S)
    assert row.ours_4gib_s == v[f"{k}.seed_memory_s.raid1_10k.p64-w25"].formatted_ci()
    assert set(plain.walkers_table().walker) == {"writes every block", "wait from each write's start"}


def test_twice_the_memory_over_half_of_it_tests_that_the_dump_scales(quick_analysis):
    """C003-5 ('the dump time scales with the amount of memory'): the grid walker at plan.HALF_POINT (the tuned
    setting) over the whole memory ÷ over half of it, paired within each replicate on the array, in per cent (200 for
    a walker whose every iteration costs the same), over the replicates; the run records the point."""
    a = quick_analysis
    v = a.value("memory_dump.scaling.raid1_10k")
    s = planmod.scale(profiles.get("quick"))
    assert v.value == pytest.approx(200, abs=0.1) and v.n == s.repeats + s.extra_replicates and v.unit == "%"
    assert v.low <= v.value <= v.high and "memory_dump.scaling.ssd" not in {x.key for x in a.values}
    claim = {o.claim.label: o for o in a.outcomes}["C003-5"]
    assert claim.claim.value_key == "memory_dump.scaling.raid1_10k" and claim.claim.published == 200
    half = an.measurements(a.record, planmod.HALF_PHASE)
    assert len(half) == s.repeats + s.extra_replicates and set(half.label) == {planmod.HALF_POINT.label}
    assert "p2048-w2 over the whole memory" in claim.claim.stand_in
    assert [c.label for c in an._claims()][-1] == "C003-5"


def test_the_scaling_is_formed_at_the_point_the_half_memory_walker_ran_at():
    """A run from before the science plan §18 ran the half-memory walker at the defaults: its scaling is the
    defaults' (and says so beside the value); two points in one run cannot form one value."""
    from snaptax.errors import AnalysisError
    from snaptax.studies.memory_dump.replicates import scaling_values

    def frame(label, seconds):
        return pd.DataFrame({"role": "raid1_10k", "label": label, "replicate": [0, 1, 2], "dump_s": seconds})

    meas = pd.concat([frame("p64-w25", [30.0, 31.0, 32.0]), frame("p2048-w2", [2.0, 2.2, 2.4])])
    values = {v.key: v for v in scaling_values(meas, frame("p64-w25", [15.0, 15.5, 16.0]))}
    assert values["memory_dump.scaling.raid1_10k"].value == pytest.approx(200)
    assert values["memory_dump.scaling_point.raid1_10k"].text == "p64-w25"
    values = {v.key: v for v in scaling_values(meas, frame("p2048-w2", [1.1, 1.1, 1.2]))}
    assert values["memory_dump.scaling.raid1_10k"].value == pytest.approx(
        100 * math.exp(np.mean(np.log([2.0 / 1.1, 2.2 / 1.1, 2.4 / 1.2]))))
    assert values["memory_dump.scaling_point.raid1_10k"].text == "p2048-w2"
    with pytest.raises(AnalysisError, match="2 points"):
        scaling_values(meas, pd.concat([frame("p64-w25", [15.0] * 3), frame("p2048-w2", [1.1] * 3)]))


def test_a_part_without_the_array_analyses_alone_and_judges_nothing(tmp_path):
    """A part of the SSD-class role alone (memory_dump's ssd.r<i>: `snaptax compare` reads parts one by one) is
    analysed without the array's walker: its values, and no claim (every claim reads the array's walker)."""
    p = profiles.get("quick")
    study = planmod.build_plan(p, part="ssd.r0")
    points = [(vp.variant, i, m, 0) for vp in study.variants for i, m, _ in vp.plan.measurements()]
    assert {split_replicate(v)[0] for v, *_ in points} == {"ssd"}

    def measured(variant, index, step, chain):
        pt = planmod.point_of(step.job)
        t = exact("ssd", pt, step.job.size) * (1 + 0.01 * (index % 3 - 1))    # some spread for the fits
        return fio_result(step.job.name, write_iops=step.job.size // step.job.bs / t, runtime_s=t), {}, {}, {}

    params = planmod.parameters(p, {"ssd": "ssd", "raid1_10k": "raid1_10k"}, ()).to_json()
    a = an.analyse(RunRecord.load(write_run(tmp_path, planmod.STUDY, "quick", params, points, measured)))
    assert a.outcomes == [] and set(a.meas.role) == {"ssd"}
    assert math.isfinite(a.value("memory_dump.seed_memory_s.ssd.p64-w25").value)


def test_the_guest_part_alone_is_refused_in_one_line_naming_it(tmp_path):
    """The guest part alone (memory_dump's `guest`: no page-walker run at all) is not analysed alone: its guest
    values stand beside the walker's fits, which only its set has. `snaptax compare` of it prints this one line."""
    import json

    from snaptax.errors import AnalysisError
    p = profiles.get("quick")
    assert planmod.build_plan(p, part=planmod.GUEST_PART).variants == ()
    params = planmod.parameters(p, {"ssd": "ssd", "raid1_10k": "raid1_10k"}, ()).to_json()
    path = write_run(tmp_path, planmod.STUDY, "quick", params, [], lambda *a: None)
    (path / planmod.GUEST_FILE).write_text(json.dumps(guest_doc("quick")))
    with pytest.raises(AnalysisError, match=f"{path.name}: no page-walker measurements"):
        an.analyse(RunRecord.load(path))
