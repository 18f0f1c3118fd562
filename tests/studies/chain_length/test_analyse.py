"""The chain-length analysis on synthetic runs with known answers: losses, intervals, fits, verdicts."""
import math
from dataclasses import asdict

import numpy as np
import pytest

from snaptax import fiolog, profiles, studies
from snaptax.plan import part_name, split_replicate
from snaptax.record import RunPart, RunRecord, load_run
from snaptax.studies.chain_length import analyse as an, plan as planmod
from tests.synthetic import fio_log, fio_result, write_run

LOSS = {"on-disk-metadata": 0.6, "in-memory-metadata": 0.3, planmod.LVM_THIN: 0.02}   # loss with one snapshot
BASE = {"on-disk-metadata": 1000.0, "in-memory-metadata": 2000.0, planmod.LVM_THIN: 500.0}
GUEST_RAW_IOPS = 600.0   # the same jobs on the guest's flat volume


QUICK = planmod.scale(profiles.get("quick"))


def make_run(tmp_path, profile="quick", noise=0.0, drift=0.0, between=0.0):
    return an.analyse(RunRecord.load(build_run(tmp_path, profile, noise, drift, between)))


def build_run(tmp_path, profile="quick", noise=0.0, drift=0.0, between=0.0, part=None, run_id=None):
    """A synthetic run of the plan at `profile`: noise alternates within a replicate; `between` moves every run
    with a snapshot, and every deleting run, of replicate r by (r − 1) × between (the replicates' own spread);
    drift runs through the run. part: only that part of the plan (planmod.parts), published as that part, each
    point measured as in the whole run."""
    p = profiles.get(profile)
    study = planmod.build_plan(p)
    points = [(v.variant, i, m, n) for v in study.variants for i, m, n in v.plan.measurements()]
    kept = [pt for pt in points if part is None or part_name(pt[0]) == part]

    def measured(recorded, index, step, n):
        variant, replicate = split_replicate(recorded)
        base = GUEST_RAW_IOPS if step.phase == "guest-raw" else BASE[variant]
        iops = base if n == 0 else base * (1 - LOSS[variant]) / (1 + 0.1 * (n - 1))
        if n or step.phase == "delete":
            iops *= 1 + between * (replicate - 1)
        iops *= 1 + noise * (1 if (step.repeat + n) % 2 else -1)  # not shared by a pair: widens the interval
        iops *= 1 + drift * index / len(points)                    # slow drift of the disk over the run
        reads = int(round(iops / 2))
        # a write with a chain costs 3 device writes while creating (allocation), 1.5 while deleting
        per_write = (3 if step.phase == "create" else 1.5) if n else 1
        before = {"host.reads": 0, "host.writes": 0}
        after = {"host.reads": reads * (2 if n else 1), "host.writes": int(round(iops / 2 * per_write))}
        if variant == planmod.LVM_THIN:   # 80 % of the writes with a snapshot break a shared chunk
            writes = int(round(iops / 2)) * 5
            before.update({"engine.chunks_broken": 0, "guest.writes": 0})
            after.update({"engine.chunks_broken": int(0.8 * writes) if n else 0, "guest.writes": writes})
        return fio_result(step.job.name, iops / 2, iops / 2), before, after, {}

    configs = {c.name: asdict(c) for c in planmod.configs(p)}
    parameters = planmod.parameters(p, "ssd").to_json()
    described = {name: {"engine": "qcow2", "config": c} for name, c in configs.items()}
    described[planmod.LVM_THIN] = {"engine": "lvmthin", "config": asdict(planmod.lvmthin_config(p))}
    variants = {v.variant: described[split_replicate(v.variant)[0]] for v in study.variants}
    recorded = RunPart(part, planmod.parts(p)) if part else None
    return write_run(tmp_path, "chain_length", profile, parameters, kept, measured, variants=variants,
                     run_id=run_id, part=recorded)


def test_a_run_measured_in_parts_gives_the_whole_run_s_values(tmp_path, data_dir):
    """The nine parts (one configuration in one replicate each, its baselines with it) read as one record give every
    value of the run that measured the same points in one session (record.parts); the run's own identity aside."""
    whole = make_run(tmp_path / "whole", noise=0.01, drift=0.02, between=0.01)
    names = planmod.parts(profiles.get("quick"))
    for k, part in enumerate(names):
        build_run(tmp_path, noise=0.01, drift=0.02, between=0.01, part=part,
                  run_id=f"202601{k + 2:02d}T000000Z-quick-{part}")
    parted = an.analyse(load_run(studies.get("chain_length").newest_run("t", "quick")))
    assert len(parted.record.manifest.parts) == len(names) == 9 and parted.record.run_id.count("+") == 8
    mine = {v.key: v for v in parted.values if ".run." not in v.key}
    theirs = {v.key: v for v in whole.values if ".run." not in v.key}
    assert mine.keys() == theirs.keys() and len(mine) > 100
    for key, v in theirs.items():
        got = mine[key]
        assert (got.n, got.text, got.method) == (v.n, v.text, v.method), key
        assert [got.value, got.low, got.high] == pytest.approx([v.value, v.low, v.high], nan_ok=True, rel=1e-9), key
    assert [o.verdict for o in parted.outcomes] == [o.verdict for o in whole.outcomes]
    # the paper prints the set's id short: its first part's start and profile, and its count
    printed = parted.derived_values().values["chain_length.run.id"].text
    assert printed == "20260102T000000Z-quick (9 parts)"


def test_loss_and_host_reads_come_from_the_data(tmp_path):
    a = make_run(tmp_path)
    loss = a.value("chain_length.loss.on-disk-metadata.randrw")
    assert loss.value == pytest.approx(60, abs=0.1)
    assert a.value("chain_length.loss.in-memory-metadata.randrw").value == pytest.approx(30, abs=0.1)
    assert a.value("chain_length.host_reads_per_vm_read.on-disk-metadata.snapshot").value == pytest.approx(2, abs=0.01)
    assert a.value("chain_length.host_reads_per_vm_read.on-disk-metadata.none").value == pytest.approx(1, abs=0.01)
    assert a.value("chain_length.recovery.on-disk-metadata.mirror").value == pytest.approx(100, abs=0.1)


def test_the_array_native_row_and_the_guest_ceiling(tmp_path):
    a = make_run(tmp_path, noise=0.002)
    assert a.value("chain_length.loss.lvm-thin.randrw").value == pytest.approx(2, abs=0.3)
    # the flat volume ran beside every second pair; thin ÷ raw is paired, guest ÷ host a ratio of means
    raw = a.value("chain_length.guest.raw_iops.randrw")
    assert raw.value == pytest.approx(GUEST_RAW_IOPS, rel=0.01)
    assert raw.n == QUICK.pairs // 2 * QUICK.replicates
    assert a.value("chain_length.guest.thin_over_raw.randrw").value == pytest.approx(100 * 500 / 600, rel=0.01)
    assert a.value("chain_length.guest.guest_over_host.readwrite").value == pytest.approx(60, rel=0.01)
    # the longest chain (5 at quick): 1 − 0.98/1.4 = 30 % loss in this synthetic run, judged against "nearly zero"
    end = a.value("chain_length.chain_end_loss.lvm-thin.randrw")
    assert end.value == pytest.approx(100 * (1 - 0.98 / 1.4), abs=0.5)
    v = {o.claim.id: o.verdict for o in a.outcomes}
    # over 3 replicates with the same ratio each: 2 % against 'no impact' ± 15 pp, 30 % against 'nearly zero'
    assert v["chain_length.loss.lvm-thin.randrw"] == "agrees"
    assert v["chain_length.chain_end_loss.lvm-thin.randrw"] == "differs"
    assert not [c for c in v if c.startswith("chain_length.recovery.lvm-thin")]   # no published recovery for vVOL
    assert ("lvm-thin", "randrw") in a.fits
    assert list(a.guest_table().job) == ["randrw", "readwrite"]
    assert a.value("chain_length.chunks_broken_per_write.lvm-thin.randrw").value == pytest.approx(0.8, abs=0.01)


def test_the_mirror_job_creates_and_deletes(tmp_path):
    """Seed 001's figures 5/6: the mirror job runs before the sweep, at every length while creating, and alone while
    deleting; deleting ÷ creating at the same length is its 'mirror image' claim, the deletes' end its recovery."""
    a = make_run(tmp_path, noise=0.01)
    jobs = a.meas.groupby("phase").job.unique()
    assert set(jobs["delete"]) == {planmod.MIRROR} and planmod.MIRROR in set(jobs["create"])
    assert set(jobs[planmod.BEFORE]) == {planmod.MIRROR}
    assert {k[1] for k in a.recovery} == {planmod.MIRROR}
    mirror = a.value("chain_length.delete_over_create.on-disk-metadata.mirror")
    assert mirror.value == pytest.approx(100, abs=0.1)
    assert mirror.n == QUICK.replicates       # one ratio per replicate over lengths 1 .. max_chain − 1
    v = {o.claim.id: o.verdict for o in a.outcomes}
    assert v["chain_length.delete_over_create.on-disk-metadata.mirror"] == "agrees"
    assert "chain_length.delete_over_create.lvm-thin.mirror" not in v              # vVOL: a value, not a claim
    assert "chain_length.chain_end_loss.lvm-thin.mirror" not in v                  # 'nearly zero': figures 1-4
    writes = "chain_length.host_writes_per_vm_write.on-disk-metadata.mirror"
    assert a.value(f"{writes}.create").value == pytest.approx(3, rel=0.01)
    assert a.value(f"{writes}.delete").value == pytest.approx(1.5, rel=0.01)


def test_the_largest_loss_is_the_longest_chain_s(tmp_path):
    """'As much as 85 %' (VMFS): the job that lost most at the longest chain, 1 − 0.4/1.4 = 71.4 % here."""
    a = make_run(tmp_path, noise=0.002)
    largest = a.value("chain_length.chain_end_loss_max.on-disk-metadata")
    assert largest.value == pytest.approx(100 * (1 - 0.4 / 1.4), abs=1)
    assert largest.n == QUICK.replicates and largest.independent
    v = {o.claim.id: o.verdict for o in a.outcomes}
    assert not [c for c in v if c.startswith("chain_length.chain_end_loss_max.in-memory")]


def test_the_loss_grows_with_the_chain_within_each_replicate(tmp_path):
    """C001-6: the loss at the longest chain minus with one snapshot, pp, per replicate within its sweep, over the
    replicates: VMFS's 1 − 0.4/1.4 − 60 % = 11.4 pp and vSAN's 1 − 0.7/1.4 − 30 % = 20 pp here, growth beyond
    the 5 pp that matter (agrees); vVOL's is a value, not a claim (its seed statement is 'nearly zero')."""
    a = make_run(tmp_path, noise=0.002, between=0.02)
    longest = QUICK.max_chain
    for variant, expect in (("on-disk-metadata", 0.4), ("in-memory-metadata", 0.7)):
        g = a.value(f"chain_length.chain_growth.{variant}.randrw")
        assert g.value == pytest.approx(100 * (1 - expect / (1 + 0.1 * (longest - 1))) - 100 * LOSS[variant], abs=1)
        assert g.n == QUICK.replicates and g.independent and g.low < g.value < g.high
    v = {o.claim.id: (o.claim.seed_label, o.verdict) for o in a.outcomes}
    assert v["chain_length.chain_growth.on-disk-metadata.randrw"] == ("C001-6", "agrees")
    assert v["chain_length.chain_growth.in-memory-metadata.randrw"] == ("C001-6", "agrees")
    assert "chain_length.chain_growth.lvm-thin.randrw" not in v
    assert a.value("chain_length.chain_growth.lvm-thin.randrw").n == QUICK.replicates


def test_fit_recovers_the_per_layer_cost(tmp_path):
    a = make_run(tmp_path)
    f = a.fits[("on-disk-metadata", "randrw")]
    # τ(n) = 1e6/IOPS: base 1000 µs, first snapshot 1e6/400 − 1000 = 1500 µs, each layer 0.1 × 2500 = 250 µs
    assert f.tau0_us == pytest.approx(1000, rel=1e-6)
    assert f.tau1_us == pytest.approx(1500, rel=1e-6)
    assert f.tau_layer_us == pytest.approx(250, rel=1e-6)


def test_verdicts_over_independent_replicates(tmp_path):
    """The claims' values are over the replicates (a fresh engine each), with a t pivot the verdict rule tests: 60 %
    and 30 % losses against the seed's 65 % and 35 % ± 15 pp agree, 30 % against 'no impact' differs."""
    a = make_run(tmp_path, noise=0.002, between=0.02)
    v = {o.claim.id: o.verdict for o in a.outcomes}
    assert v["chain_length.loss.on-disk-metadata.randrw"] == "agrees"
    assert v["chain_length.loss.in-memory-metadata.randrw"] == "agrees"
    assert v["chain_length.loss.in-memory-metadata.readwrite"] == "differs"
    assert v["chain_length.recovery.on-disk-metadata.mirror"] == "agrees"
    loss = a.value("chain_length.loss.on-disk-metadata.randrw")
    assert loss.low < loss.value < loss.high and loss.n == QUICK.replicates and loss.independent
    assert a.value("chain_length.replicates").value == QUICK.replicates


def test_a_wide_spread_between_replicates_is_inconclusive(tmp_path):
    """Replicates 40 % apart: the interval over them is wider than the band, however tight each replicate's pairs."""
    a = make_run(tmp_path, between=0.4)
    v = {o.claim.id: o.verdict for o in a.outcomes}
    assert v["chain_length.loss.on-disk-metadata.randrw"] == "inconclusive"


def test_smoke_is_too_short_to_judge_recovery(tmp_path):
    """Smoke has two no-snapshot runs before the sweep: their spread, with t(1) = 12.7, makes the recovery's
    interval far wider than its band."""
    a = make_run(tmp_path, profile="smoke", noise=0.05)
    recovery = [o for o in a.outcomes if ".recovery." in o.claim.id]
    assert recovery and {o.verdict for o in recovery} == {"not judged"}


def test_recovery_is_one_ratio_per_replicate(tmp_path):
    """The runs after the deletes against those before the sweep, one ratio per replicate: the interval is the
    spread of those ratios (the runs within one replicate are not independent of each other)."""
    a = make_run(tmp_path, noise=0.02, between=0.01)
    v = a.value("chain_length.recovery.on-disk-metadata.mirror")
    assert v.method.startswith("t over 3 independent runs") and v.n == QUICK.replicates
    assert v.low < v.value < v.high


def test_pairs_cancel_drift_shared_by_neighbours(tmp_path):
    """A slow drift over the run (here 30 %) moves every IOPS but not the ratio of neighbours."""
    a = make_run(tmp_path, drift=0.3)
    loss = a.value("chain_length.loss.on-disk-metadata.randrw")
    assert loss.value == pytest.approx(60, abs=0.5) and loss.high - loss.low < 2


def test_results_round_trip(tmp_path):
    from snaptax.values import DerivedValues

    a = make_run(tmp_path)
    back = DerivedValues.from_json(a.derived_values().to_json())
    assert back.values["chain_length.loss.on-disk-metadata.randrw"].value == pytest.approx(60, abs=0.1)
    assert back.values["chain_length.run.id"].text == a.record.run_id
    assert {c["verdict"] for c in back.claims} <= {"agrees", "differs", "inconclusive", "not judged", "calibration"}


# --- the loss in each second of the pairs' runs, from fio's per-second IOPS logs -----------------------------------

needs_fiologparser = pytest.mark.skipif(not fiolog.SCRIPT_GZ.exists(), reason="needs Debian's fiologparser.py.gz")
# Loss with one snapshot in seconds 1, 2, 3: LVM thin's a transient of the fresh snapshot, the others' constant.
LOSS_BY_SECOND = {"on-disk-metadata": (0.6, 0.6, 0.6), "in-memory-metadata": (0.3, 0.3, 0.3),
                  planmod.LVM_THIN: (0.5, 0.2, 0.0)}


def write_logs(run, short=None):
    """fio_iops.log into every pair run of a synthetic run: the pairs' runs without a snapshot at 8000 IOPS × a
    factor of the pair (drift both members share), those with one at (1 − loss in that second) of it × 1 ± 1 %
    (alternating: the pairs' spread). short: (variant, repeat) → jobs of that pair's one-snapshot run that stop
    before their third second."""
    for m in RunRecord.load(run).measurements:
        if m.phase != "pair":
            continue
        drift = 1 + 0.1 * m.repeat
        spread = 1 + 0.01 * (1 if m.repeat % 2 else -1)
        ratio = [(1 - loss) * spread if m.chain_length else 1.0
                 for loss in LOSS_BY_SECOND[split_replicate(m.variant)[0]]]
        short_jobs = (short or {}).get((m.variant, m.repeat), 0) if m.chain_length else 0
        (m.directory / fiolog.IOPS_LOG).write_text(fio_log([8000 * drift * r for r in ratio], short_jobs=short_jobs))


def test_loss_by_second_and_settling_from_arrays():
    """Pairs × seconds: one ÷ none is 0.5, 0.75, 1 in seconds 1-3 (× a spread of the pair that lasts the run), so
    the settling is 1 ÷ 0.5 = 2 exactly, with an interval of zero width."""
    none = np.array([[1000.0, 1100, 900], [2000, 2000, 2100], [1500, 1400, 1500], [800, 900, 800]])
    spread = np.array([[0.98], [1.02], [0.99], [1.01]])
    one = none * np.array([0.5, 0.75, 1.0]) * spread
    ivs = an.loss_by_second(one, none)
    gm = math.exp(np.log(spread).mean())
    assert [iv.estimate for iv in ivs] == pytest.approx([0.5 * gm, 0.75 * gm, gm])
    assert all(iv.n == 4 and iv.low < iv.estimate < iv.high for iv in ivs)
    s = an.settling_ratio(one, none)
    assert (s.estimate, s.low, s.high, s.n) == pytest.approx((2.0, 2.0, 2.0, 4))
    # a pair without a third second: that second stands on the 3 others, the settling too
    one[1, 2] = np.nan
    assert [iv.n for iv in an.loss_by_second(one, none)] == [4, 4, 3]
    assert an.settling_ratio(one, none).n == 3
    # a second fewer than half of the pairs have is not reported; one second gives no settling
    one[:3, 2] = np.nan
    assert len(an.loss_by_second(one, none)) == 2 and an.settling_ratio(one, none).estimate == pytest.approx(1.5)
    assert math.isnan(an.settling_ratio(one[:, :1], none[:, :1]).estimate)


def test_seconds_kept_needs_half_of_the_pairs_and_two():
    full, nan = np.ones((4, 3)), np.full(4, np.nan)
    assert an.seconds_kept(full, full) == 3
    part = full.copy()
    part[:2, 2] = np.nan                       # 2 of 4 pairs have the third second: half
    assert an.seconds_kept(part, full) == 3
    part[2, 2] = np.nan                        # 1 of 4
    assert an.seconds_kept(full, part) == 2
    assert an.seconds_kept(np.ones((1, 3)), np.ones((1, 3))) == 0     # one pair: no interval
    assert an.seconds_kept(np.column_stack([nan, nan]), np.ones((4, 2))) == 0


@needs_fiologparser
def test_the_loss_in_each_second_of_the_pairs(tmp_path):
    run = build_run(tmp_path)
    write_logs(run, short={("on-disk-metadata", 1): 1})
    a = an.analyse(RunRecord.load(run))
    pairs = QUICK.pairs * QUICK.replicates     # the per-second losses pool every replicate's pairs
    for second, loss in enumerate(LOSS_BY_SECOND[planmod.LVM_THIN], 1):
        v = a.value(f"chain_length.loss_by_second.lvm-thin.randrw.s{second}")
        assert v.value == pytest.approx(100 * loss, abs=0.5) and v.unit == "%" and v.n == pairs
        assert v.low < v.value < v.high
    assert a.value("chain_length.loss_by_second.lvm-thin.randrw.last").value == pytest.approx(0, abs=0.5)
    # the loss shrank from 50 % to none: the last second's ratio is twice the first's
    assert a.value("chain_length.loss_settling.lvm-thin.randrw").value == pytest.approx(200, rel=0.01)
    # a constant loss: the same in every second, no settling (exactly 100 %: the pairs' spread lasts the run)
    for second in (1, 2, 3):
        v = a.value(f"chain_length.loss_by_second.on-disk-metadata.readwrite.s{second}")
        assert v.value == pytest.approx(60, abs=0.5)
    settling = a.value("chain_length.loss_settling.in-memory-metadata.randrw")
    assert settling.value == pytest.approx(100, abs=0.5) and settling.n == pairs
    # one pair's one-snapshot run has a job without a third second: that second stands on the other pairs
    assert a.value("chain_length.loss_by_second.on-disk-metadata.randrw.s3").n == pairs - 1
    assert a.value("chain_length.loss_by_second.on-disk-metadata.randrw.s2").n == pairs
    assert a.value("chain_length.loss_seconds.on-disk-metadata.randrw").value == 3
    table = a.by_second_table()
    assert len(table) == 6 * 3 and set(table.second) == {1, 2, 3}


def test_no_log_no_loss_by_second(tmp_path):
    """Runs without fio's per-second logs (the synthetic ones above), like runs too short to have a whole second,
    give the loss over the run only: the first and last seconds and the settling are there, nan (the paper quotes
    them, and is also built from smoke runs)."""
    a = make_run(tmp_path)
    per_second = [v for v in a.values if ".loss_by_second." in v.key or ".loss_settling." in v.key]
    assert per_second and all(math.isnan(v.value) and not v.has_interval for v in per_second)
    assert {v.key.rsplit(".", 1)[-1] for v in per_second if ".loss_by_second." in v.key} == {"s1", "last"}
    assert a.by_second == {} and a.by_second_table().empty
