"""The chain-length analysis on synthetic runs with known answers: losses, intervals, fits, verdicts."""
from dataclasses import asdict

import pytest

from snaptax import profiles
from snaptax.record import RunRecord
from snaptax.studies.chain_length import analyse as an, plan as planmod
from tests.synthetic import fio_result, write_run

LOSS = {"on-disk-metadata": 0.6, "in-memory-metadata": 0.3, planmod.LVM_THIN: 0.02}   # loss with one snapshot
BASE = {"on-disk-metadata": 1000.0, "in-memory-metadata": 2000.0, planmod.LVM_THIN: 500.0}
GUEST_RAW_IOPS = 600.0   # the same jobs on the guest's flat volume


def make_run(tmp_path, profile="quick", noise=0.0, drift=0.0):
    p = profiles.get(profile)
    study = planmod.build_plan(p)
    points = [(v.variant, i, m, n) for v in study.variants for i, m, n in v.plan.measurements()]

    def measured(variant, index, step, n):
        base = GUEST_RAW_IOPS if step.phase == "guest-raw" else BASE[variant]
        iops = base if n == 0 else base * (1 - LOSS[variant]) / (1 + 0.1 * (n - 1))
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
    variants = {name: {"engine": "qcow2", "config": c} for name, c in configs.items()}
    variants[planmod.LVM_THIN] = {"engine": "lvmthin", "config": asdict(planmod.lvmthin_config(p))}
    run = write_run(tmp_path, "chain_length", profile, parameters, points, measured, variants=variants)
    return an.analyse(RunRecord.load(run))


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
    assert raw.n == planmod.scale(profiles.get("quick")).pairs // 2
    assert a.value("chain_length.guest.thin_over_raw.randrw").value == pytest.approx(100 * 500 / 600, rel=0.01)
    assert a.value("chain_length.guest.guest_over_host.readwrite").value == pytest.approx(60, rel=0.01)
    # the longest chain (5 at quick): 1 − 0.98/1.4 = 30 % loss in this synthetic run, judged against "nearly zero"
    end = a.value("chain_length.chain_end_loss.lvm-thin.randrw")
    assert end.value == pytest.approx(100 * (1 - 0.98 / 1.4), abs=0.5)
    v = {o.claim.id: o.verdict for o in a.outcomes}
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
    assert mirror.n == planmod.scale(profiles.get("quick")).max_chain - 1       # lengths 1 .. max_chain − 1
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
    v = {o.claim.id: o.verdict for o in a.outcomes}
    assert v["chain_length.chain_end_loss_max.on-disk-metadata"] == "agrees"     # 71 vs 85 ± 15
    assert not [c for c in v if c.startswith("chain_length.chain_end_loss_max.in-memory")]


def test_fit_recovers_the_per_layer_cost(tmp_path):
    a = make_run(tmp_path)
    f = a.fits[("on-disk-metadata", "randrw")]
    # τ(n) = 1e6/IOPS: base 1000 µs, first snapshot 1e6/400 − 1000 = 1500 µs, each layer 0.1 × 2500 = 250 µs
    assert f.tau0_us == pytest.approx(1000, rel=1e-6)
    assert f.tau1_us == pytest.approx(1500, rel=1e-6)
    assert f.tau_layer_us == pytest.approx(250, rel=1e-6)


def test_verdicts_on_intervals(tmp_path):
    a = make_run(tmp_path, noise=0.002)
    v = {o.claim.id: o.verdict for o in a.outcomes}
    assert v["chain_length.loss.on-disk-metadata.randrw"] == "agrees"             # 60 [..] vs 65 ± 15
    assert v["chain_length.loss.in-memory-metadata.randrw"] == "agrees"           # 30 vs 35 ± 15
    assert v["chain_length.loss.in-memory-metadata.readwrite"] == "differs"       # 30 vs no impact ± 15
    assert v["chain_length.recovery.on-disk-metadata.mirror"] == "agrees"         # 100 vs 100 ± 10
    loss = a.value("chain_length.loss.on-disk-metadata.randrw")
    assert loss.low < loss.value < loss.high and loss.n == planmod.scale(profiles.get("quick")).pairs


def test_smoke_is_too_short_to_judge_recovery(tmp_path):
    """Smoke has two no-snapshot runs before the sweep: their spread, with t(1) = 12.7, makes the recovery's
    interval far wider than its band."""
    a = make_run(tmp_path, profile="smoke", noise=0.05)
    recovery = [o for o in a.outcomes if ".recovery." in o.claim.id]
    assert recovery and {o.verdict for o in recovery} == {"inconclusive"}


def test_recovery_counts_the_end_runs_as_one_observation(tmp_path):
    """The runs after the deletes are neighbours: the interval comes from the spread of the runs before the sweep
    (stats.ratio_across_time_interval), not from the end runs' own agreement."""
    a = make_run(tmp_path, noise=0.02)
    v = a.value("chain_length.recovery.on-disk-metadata.mirror")
    assert v.method == "ratio across time" and v.n == planmod.scale(profiles.get("quick")).pairs
    assert v.low < v.value < v.high


def test_pairs_cancel_drift_shared_by_neighbours(tmp_path):
    """A slow drift over the run (here 30 %) moves every IOPS but not the ratio of neighbours."""
    a = make_run(tmp_path, drift=0.3)
    loss = a.value("chain_length.loss.on-disk-metadata.randrw")
    assert loss.value == pytest.approx(60, abs=0.5) and loss.high - loss.low < 2


def test_results_json_round_trip(tmp_path):
    from snaptax.values import Results

    a = make_run(tmp_path)
    path = a.results().write(a.record.path)
    back = Results.load(path.parent)
    assert back.values["chain_length.loss.on-disk-metadata.randrw"].value == pytest.approx(60, abs=0.1)
    assert back.values["chain_length.run.id"].text == a.record.run_id
    assert {c["verdict"] for c in back.claims} <= {"agrees", "differs", "same direction", "inconclusive"}
