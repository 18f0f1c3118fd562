"""The lifecycle analysis on a synthetic run whose timelines have known ratios (host reads doubled with a
snapshot, host writes doubled while the delta fills, reads collapsing during a saturated deletion) and whose
iterative deletions follow the consolidation model with known parameters."""
import csv

import pytest

from snaptax import profiles
from snaptax.claims import verdict
from snaptax.models import consolidation as cm
from snaptax.plan import Measure
from snaptax.record import RunRecord
from snaptax.studies.lifecycle import analyse as an, plan as planmod
from tests.synthetic import fio_result, write_run

MiB = 1 << 20
TRUTH = dict(t0=0.2, c0=20 * MiB, b=0.04 * MiB, a=48_000.0)
S = planmod.scale(profiles.get("quick"))
VM = {"light": 30.0, "saturated": 400.0}
D0 = 2 * S.file_bytes


def deletion(load, method, rate):
    c, u = TRUTH["c0"] - TRUTH["b"] * rate, TRUTH["a"] * rate
    tr = cm.iterate(D0, u, c, S.helper_threshold_bytes, t0=TRUTH["t0"], c_idle=TRUTH["c0"],
                    max_iterations=S.max_iterations, max_stun_s=S.max_consolidate_s)
    t, its = 2.0, []
    for k, (dk, tk) in enumerate(zip(tr.committed, tr.seconds, strict=True)):
        its.append({"k": k, "t_start": t, "t_end": t + tk, "committed_bytes": dk, "seconds": tk,
                    "helper_bytes": u * tk})
        t += tk
    after = 0.0 if tr.converged else 3.0
    return {"method": method, "t_delete_start": 1.0, "t_done": t + (tr.stun_s if tr.converged else after),
            "converged": tr.converged, "iterations": its if method == "iterative" else [],
            "stun_s": tr.stun_s if tr.converged else 0.0, "after_load_s": after, "seconds": t - 1.0,
            "delta0_bytes": D0, "threshold_bytes": S.helper_threshold_bytes, "max_iterations": S.max_iterations}


def make_run(tmp_path):
    points = []
    for load, method in planmod.variants():
        for i, ph in enumerate(planmod.PHASES):
            job = planmod.workload(S, load, 6, "w").summary_job()
            points.append((planmod.variant_name(load, method), i + 1, Measure(job, ph), 0))
    rates = [10, 40, 80, 160, 400, 600]
    for i, r in enumerate(rates):
        points.append((planmod.GRID, i + 1, Measure(planmod.grid_workload(S, r).summary_job(), "delete"), 0))

    def measured(variant, index, step, chain):
        load, method = an._split(variant)
        ph = step.phase
        wall = 10.0
        t0 = 10.0 * index
        if variant == planmod.GRID:
            rate = float(S.grid_rates[index - 1]) if index <= len(S.grid_rates) else [400, 600][index - 6]
            r = w = rate
            info = deletion("grid", "iterative", rate)
            extra = {"deletion": info, "rate_iops": rate}
        else:
            r = w = VM[load]
            if ph == "delete" and load == "saturated":
                r = 40.0
            rate = w
            info = deletion(load, method, rate) if ph == "delete" else None
            if info is not None and load == "saturated" and method == "active":
                info["converged"] = False
            extra = {"deletion": info} if info else {}
        per_read = 2.0 if ph in ("with",) else 1.0
        per_write = 2.0 if ph == "refill" else 1.0
        series = {"reader": [[s + 1.0, r] for s in range(10)], "writer": [[s + 1.0, w] for s in range(400)]}
        extra.update({"t_start_s": t0, "t_end_s": t0 + wall, "vm_series": series})
        reads, writes = r * wall, w * wall
        before = {"host.reads": 0.0, "host.writes": 0.0, "host.member0.busy_s": 0.0, "host.member_reads": 0.0,
                  "host.member_writes": 0.0}
        busy = 0.9 if ph == "after" else 1.0
        after = {"host.reads": reads * per_read, "host.writes": writes * per_write, "host.member0.busy_s": busy,
                 "host.member_reads": 100.0, "host.member_writes": 100.0}
        d = tmp_path / "staging" / planmod.STUDY / "measurements" / variant
        d.mkdir(parents=True, exist_ok=True)
        with open(d / "host_series.csv", "w", newline="") as f:
            cw = csv.writer(f)
            cw.writerow(["t_s", "host.reads", "host.writes"])
            for s in range(5):
                cw.writerow([s, 50 * s, 20 * s])
        return fio_result(step.job.name, read_iops=r, write_iops=w, runtime_s=wall), before, after, extra

    params = planmod.parameters(S, "raid1_10k").to_json()
    return RunRecord.load(write_run(tmp_path, planmod.STUDY, "quick", params, points, measured))


def test_ratios_deletions_and_model(tmp_path):
    a = an.analyse(make_run(tmp_path))
    v = {x.key: x for x in a.values}
    assert v["lifecycle.light.vm_with_over_before"].value == pytest.approx(100)
    assert v["lifecycle.light.host_reads_per_vm_read_factor"].value == pytest.approx(2.0)
    assert v["lifecycle.light.host_writes_per_vm_write_refill_factor"].value == pytest.approx(2.0)
    assert v["lifecycle.saturated.vm_read_delete_over_before"].value == pytest.approx(10.0)
    assert v["lifecycle.light.service_after_over_with"].value == pytest.approx(90.0)
    assert v["lifecycle.saturated.converged_pct"].value == 0
    # host series: 50 reads and 20 writes per second
    h = a.timeline[(a.timeline.level == "host") & (a.timeline.variant == "light-active")]
    assert set(h[h.direction == "read"].iops) == {50.0}
    # the model recovers the parameters the iterations were made with
    f = a.fit
    assert f is not None
    for name in ("t0", "c0", "b", "a"):
        est = getattr(f, name)
        # noise-free iterations: the interval may shrink to the estimate's last bits, so it is widened by 1e-9
        # relative before asking it to hold the truth (nothing may depend on a float's last bits)
        slack = 1e-9 * abs(TRUTH[name]) + 1e-12
        assert est.value == pytest.approx(TRUTH[name], rel=0.02)
        assert est.low - slack <= TRUTH[name] <= est.high + slack
    assert (a.predictions.converged == a.predictions.predicted_converged).all()
    assert {o.claim.id for o in a.outcomes} >= {"lifecycle.C000-1a", "lifecycle.C000-4", "lifecycle.C000-6"}
    o = {x.claim.id: x for x in a.outcomes}
    # the timelines of a load level are independent replicates of the phases before the deletion: judged
    one = o["lifecycle.C000-1b"].ours
    assert (one.n, one.independent) == (len(planmod.METHODS), True)
    assert verdict(o["lifecycle.C000-1b"].claim, one) == "agrees"
    # a per-second series of one deletion and two binary outcomes are not
    assert verdict(o["lifecycle.C000-3b"].claim, o["lifecycle.C000-3b"].ours) == "not judged"
    assert verdict(o["lifecycle.C000-4"].claim, o["lifecycle.C000-4"].ours) == "not judged"


def test_a_phase_before_the_deletion_differing_between_timelines_widens_the_interval(tmp_path):
    """The replicates' spread is what the interval is made of: timelines alike give none, unlike ones some."""
    a = an.analyse(make_run(tmp_path))
    meas = a.meas.copy()
    alike = an._replicated(meas, "light", "with", "before", "vm_read_iops", "pct_log")
    sel = (meas.load == "light") & (meas.phase == "with") & (meas.method == "mirror")
    meas.loc[sel, "vm_read_iops"] *= 0.8
    unlike = an._replicated(meas, "light", "with", "before", "vm_read_iops", "pct_log")
    assert alike.se == pytest.approx(0, abs=1e-9) and unlike.se > 0.05
    # one of three timelines at 80 %: geometric mean 92.8 %, and an interval over 3 runs that holds 80 and 100
    assert unlike.value == pytest.approx(100 * 0.8 ** (1 / 3))
    lo, hi = unlike.interval()
    assert lo < 80 and hi > 100


def test_claims_name_values_the_analysis_makes(tmp_path):
    a = an.analyse(make_run(tmp_path))
    keys = {x.key for x in a.values}
    assert {c.value_key for c in an.claims()} <= keys


def test_the_raid1_balance_the_vm_after_the_commit_and_the_deletion_s_rates_are_claims(tmp_path):
    a = an.analyse(make_run(tmp_path))
    v = {x.key: x for x in a.values}
    # host reads per host write before the snapshot: r reads and w writes per second, one host I/O each
    assert v["lifecycle.saturated.before.host_reads_per_host_write"].value == pytest.approx(1.0)
    assert v["lifecycle.light.vm_total_after_over_before"].value == pytest.approx(100)
    # (the synthetic timelines' per-second series do not model the deletion window: only that the values exist)
    for key in ("light.vm", "light.host", "saturated.host", "saturated.read"):
        assert f"lifecycle.{key}_during_iterative_over_before" in v
    o = {x.claim.seed_label: x for x in a.outcomes}
    assert {"C000-3c", "C000-7", "C000-8", "C000-9", "C000-10"} <= set(o)
    assert verdict(o["C000-3c"].claim, o["C000-3c"].ours) == "differs"       # 1 against 'about twice'
    assert verdict(o["C000-9"].claim, o["C000-9"].ours) == "agrees"          # three timelines, all as before
    # the deletion's per-second samples come from one timeline: not judged
    for label in ("C000-7", "C000-8", "C000-10"):
        assert verdict(o[label].claim, o[label].ours) == "not judged", label


def test_an_iteration_s_writes_are_counted_in_its_window_and_stop_with_the_writer():
    series = [(1.0, 100.0), (2.0, 100.0), (3.0, 50.0)]          # (end of second, writes/s), fio started at t=10
    assert an._writer_writes(series, 10.0, 10.0, 13.0) == pytest.approx(250.0)
    assert an._writer_writes(series, 10.0, 10.5, 11.25) == pytest.approx(75.0)   # parts of two seconds
    # the writer stopped at t=13: a window to t=20 counts what it wrote, where rate × time would count 7 s of it
    assert an._writer_writes(series, 10.0, 12.0, 20.0) == pytest.approx(50.0)
    assert an._writer_writes([], 10.0, 0.0, 5.0) == 0.0
