"""The tiering plan: the seed's IOmeter pattern, a disk scaled from the seed's, phases that fit between two tiering
cycles of the rig's tier_pool, and scales that refuse what cannot be measured."""
import dataclasses
from fractions import Fraction

import pytest

from snaptax import profiles
from snaptax.errors import ConfigError
from snaptax.host import rig as rigmod
from snaptax.record import RunWriter
from snaptax.spindle.rigfiles import parse_device
from snaptax.studies.tiering import measure, plan as planmod
from tests.parameters import assert_missing_is_named, assert_round_trip, committed_parameters


def test_the_workload_is_the_seeds_iometer_pattern():
    opts = dict(planmod.workload(planmod.scale(profiles.get("quick")), 15, "initial").options())
    assert (opts["rw"], opts["rwmixread"], opts["percentage_random"], opts["bs"]) == ("randrw", "80", "90", "32768")
    assert opts["iodepth"] == str(planmod.IODEPTH)


def test_every_phase_draws_its_own_offsets_and_a_rerun_draws_the_same():
    # the seed's IOmeter ran on through the phases: with fio's default seed every phase would replay one sequence,
    # and after a deletion LVM thin would meet only the chunks the snapshot phases had already copied
    s = planmod.scale(profiles.get("quick"))
    plan = planmod.lvmthin_plan(s, planmod.TIERED)
    seeds = [m.job.randseed for _, m, _ in plan.measurements() if m.job.rw == "randrw"]
    assert len(seeds) == len(set(seeds)) > 5
    assert planmod.workload(s, 15, "after").randseed == planmod.workload(s, 9, "after").randseed
    assert planmod.workload(s, 15, "learn", 0).randseed != planmod.workload(s, 15, "learn", 1).randseed


def test_the_fill_heats_nothing():
    # Easy Tier counts only I/Os of 64 KiB or less as heat: the fill must be larger, so learning sees the workload
    spec = parse_device({"device": "tier_pool"}, "test")
    assert planmod.fill_job(planmod.scale(profiles.get("quick"))).bs > spec.heat_max_io_bytes


def test_quick_disk_is_the_seeds_share_of_the_pool_and_of_its_ssd():
    s = planmod.scale(profiles.get("quick"))
    assert s.disk_bytes / (16 << 30) == pytest.approx(planmod.SEED_DISK_BYTES / planmod.SEED_POOL_BYTES, rel=0.1)


@pytest.mark.parametrize("name", ["quick", "full"])
def test_phases_from_learned_to_after_fit_in_one_cycle_of_the_rigs_tier_pool(name):
    s = planmod.scale(profiles.get(name))
    rig = rigmod.load("local")
    dev = measure.pool_devices(rig)[planmod.TIERED]
    cycle = parse_device(dev.spindle, rig.source).cycle_s
    # learning ends a few seconds after a cycle end (the migration); ~1 s per fio start and the commit's pivot
    assert s.between_cycles_s + 15 < cycle
    assert s.learn_limit_s > cycle         # the first cycle can end inside the learning wait


@pytest.mark.parametrize("field,value", [("phase_s", 1), ("disk_bytes", 1000), ("learned_fraction", 1.5),
                                         ("relearn_limit_s", -1)])
def test_bad_scales_are_refused_naming_the_field(field, value):
    s = planmod.scale(profiles.get("smoke"))
    with pytest.raises(ConfigError, match=field):
        dataclasses.replace(s, **{field: value})


def test_sas_pool_has_no_learning_phases():
    assert "learn" not in planmod.phases_of("sas_pool") and "relearned" in planmod.phases_of("tier_pool")


def test_ssd_share_from_counter_readings():
    before = {"host.reads": 100.0, "host.writes": 0.0, "host.ssd_reads": 50.0}
    after = {"host.reads": 180.0, "host.writes": 20.0, "host.ssd_reads": 110.0, "host.ssd_writes": 15.0}
    assert measure.ssd_share(before, after) == pytest.approx(75 / 100)
    assert measure.ssd_share(after, after) != measure.ssd_share(after, after)    # nan without I/O


def test_a_rig_without_the_pools_is_refused_in_one_line(tmp_path):
    rig = rigmod.load("local")
    bare = dataclasses.replace(rig, devices=tuple(d for d in rig.devices if d.name != "tier_pool"))
    with pytest.raises(ConfigError, match="tier_pool"):
        measure.pool_devices(bare)


@pytest.mark.parametrize("name", ["quick", "full"])
def test_lvmthin_learning_is_gated_runs_that_cover_its_limit(name):
    # the host ends the guest's learning (measure.LearningGate); the plan holds as many runs as the limit allows
    s = planmod.scale(profiles.get(name))
    plan = planmod.lvmthin_plan(s, planmod.TIERED)
    for phase, limit in (("learn", s.learn_limit_s), ("relearn", s.relearn_limit_s)):
        runs = [m for _, m, _ in plan.measurements() if m.phase == phase]
        assert len(runs) > 1 and all(m.job.runtime_s <= s.guest_segment_s and m.gate == phase for m in runs)
        # the question before the last run comes after the limit: the limit ends the loop, steps never run out
        assert sum(m.job.runtime_s for m in runs[:-1]) >= limit
        assert [m.repeat for m in runs] == list(range(len(runs)))
    assert all(m.gate is None for _, m, _ in plan.measurements() if m.phase not in ("learn", "relearn"))
    assert all(m.gate is None for _, m, _ in planmod.lvmthin_plan(s, "sas_pool").measurements())


def test_lvmthin_timelines_phases_and_snapshot():
    s = planmod.scale(profiles.get("quick"))
    for pool in planmod.POOLS:
        plan = planmod.lvmthin_plan(s, pool)
        phases = [m.phase for _, m, _ in plan.measurements() if m.phase not in ("learn", "relearn")]
        expected = ["fill", "initial", "settle", "with", "after"] + (["relearned"] if pool == planmod.TIERED else [])
        assert phases == expected
        # the snapshot exists during settle and with, and is gone for after
        chains = {m.phase: chain for _, m, chain in plan.measurements()}
        assert (chains["initial"], chains["with"], chains["after"]) == (0, 1, 0)
        assert {m.job.runtime_s for _, m, _ in plan.measurements() if m.phase == "with"} == {s.with_s}
    assert planmod.pool_of(planmod.lvmthin_variant("tier_pool")) == "tier_pool"
    assert planmod.engine_of("tier_pool") == "qcow2" and planmod.engine_of("tier_pool.lvmthin") == "lvmthin"


def test_a_scale_with_guest_runs_too_short_is_refused():
    with pytest.raises(ConfigError, match="guest_segment_s"):
        dataclasses.replace(planmod.scale(profiles.get("quick")), guest_segment_s=1)


@pytest.mark.parametrize("name", ["quick", "full"])
def test_the_guests_phases_from_learned_to_after_fit_before_the_next_cycle(name):
    # The host ends learning at the first question after a cycle end: at most one learning run (and its fio start)
    # after it. From there to the end of the after phase, each guest run costs GUEST_FIO_START_S more than its fio
    # time and lvcreate/lvremove about a second each: all of it must end before the next cycle does.
    s = planmod.scale(profiles.get(name))
    rig = rigmod.load("local")
    cycle = parse_device(measure.pool_devices(rig)[planmod.TIERED].spindle, rig.source).cycle_s
    plan = planmod.lvmthin_plan(s, planmod.TIERED)
    steady = [m for _, m, _ in plan.measurements() if m.phase in ("initial", "settle", "with", "after")]
    after_learned = (s.guest_segment_s + planmod.GUEST_FIO_START_S
                     + sum(m.job.runtime_s + planmod.GUEST_FIO_START_S for m in steady) + 2.0)
    assert after_learned + 5 < cycle


class _Pool:
    """Counters as the emulated tier pool reports them; `serve(ios, ssd)` adds I/O, `cycle()` ends a cycle."""

    def __init__(self):
        self.c = {"host.reads": 0.0, "host.writes": 0.0, "host.ssd_reads": 0.0, "host.ssd_writes": 0.0,
                  "host.tier_cycles": 0.0}

    def serve(self, ios: int, ssd: int) -> None:
        self.c["host.reads"] += ios
        self.c["host.ssd_reads"] += ssd

    def cycle(self) -> None:
        self.c["host.tier_cycles"] += 1

    def __call__(self) -> dict[str, float]:
        return dict(self.c)


def test_the_learning_gate_ends_learning_after_a_cycle_with_a_learned_share(monkeypatch):
    s = planmod.scale(profiles.get("quick"))
    pool, events, clock = _Pool(), [], [100.0]
    monkeypatch.setattr(measure.time, "monotonic", lambda: clock[0])
    gate = measure.LearningGate(pool, s, lambda kind, **d: events.append((kind, d)), t0=90.0)
    assert gate("learn", 0)                       # the first run always goes
    pool.serve(1000, 950)
    clock[0] += 11
    assert gate("learn", 1)                       # a learned share, but no cycle has ended
    pool.cycle()
    pool.serve(1000, 500)
    clock[0] += 11
    assert gate("learn", 2)                       # a cycle, but the run's share is 50 %
    pool.serve(1000, 950)
    clock[0] += 11
    assert not gate("learn", 3)                   # both: learned
    kind, data = events[-1]
    assert kind == "learn_done" and data["learned"] and data["t_s"] == 43.0 and data["ssd_share"] == 0.95
    # re-learning needs a cycle after its own first question: the cycle above does not count
    assert gate("relearn", 0)
    pool.serve(1000, 990)
    clock[0] += 11
    assert gate("relearn", 1)
    pool.cycle()
    pool.serve(1000, 990)
    clock[0] += 11
    assert not gate("relearn", 2) and events[-1][0] == "relearn_done" and events[-1][1]["learned"]


def test_the_learning_verdict_needs_both_the_cycle_and_the_share():
    s = planmod.scale(profiles.get("quick"))
    before = {"host.reads": 0.0, "host.writes": 0.0, "host.ssd_reads": 0.0, "host.ssd_writes": 0.0}
    served = {"host.reads": 800.0, "host.writes": 200.0, "host.ssd_reads": 760.0, "host.ssd_writes": 190.0}
    v = measure.learning_verdict(before, {**served, "host.tier_cycles": 2.0}, 2.0, s)
    assert v.learned and v.ssd_share == 0.95 and v.tier_cycles == 2.0
    assert not measure.learning_verdict(before, {**served, "host.tier_cycles": 1.0}, 2.0, s).learned
    half = {**served, "host.ssd_reads": 400.0, "host.ssd_writes": 100.0, "host.tier_cycles": 3.0}
    assert not measure.learning_verdict(before, half, 2.0, s).learned
    assert not measure.learning_verdict(before, {**before, "host.tier_cycles": 3.0}, 2.0, s).learned   # no I/O: nan


def test_the_learning_gate_stops_at_the_limit_unlearned(monkeypatch):
    s = planmod.scale(profiles.get("quick"))
    pool, events, clock = _Pool(), [], [0.0]
    monkeypatch.setattr(measure.time, "monotonic", lambda: clock[0])
    gate = measure.LearningGate(pool, s, lambda kind, **d: events.append((kind, d)), t0=0.0)
    assert gate("learn", 0)
    pool.serve(100, 10)
    clock[0] = s.learn_limit_s - 1
    assert gate("learn", 1)
    pool.serve(100, 10)
    clock[0] = s.learn_limit_s
    assert not gate("learn", 2)
    assert events == [("learn_done", {"t_s": s.learn_limit_s, "learned": False, "seconds": s.learn_limit_s,
                                      "ssd_share": 0.1, "tier_cycles": 0.0, "runs": 2})]


def test_the_learning_gate_refuses_a_gate_it_does_not_know():
    gate = measure.LearningGate(_Pool(), planmod.scale(profiles.get("quick")), lambda kind, **d: None, t0=0.0)
    with pytest.raises(ConfigError, match="gate.*'learning'"):
        gate("learning", 0)


class _GuestEngine:
    """execute() asks the gate as the guest would: a first learn question, then (the pool learned) a second; it
    can stall after asking, as a guest the stall watchdog ends."""

    def __init__(self, stall: bool):
        self.pool, self.stall = _Pool(), stall

    def counters(self) -> dict[str, float]:
        return self.pool()

    def execute(self, plan, session, clock_t0=None, *, gate=None):
        assert gate("learn", 0)
        self.pool.cycle()
        self.pool.serve(100, 95)
        assert not gate("learn", 1)
        if self.stall:
            raise TimeoutError("guest stalled")


class _Session:
    def __init__(self, staging):
        self.staging, self.variant, self.events = staging, "tier_pool.lvmthin", []

    variant_dir = RunWriter.variant_dir      # where the real session puts a variant's files (host_series.csv)

    def log_event(self, kind, **data):
        self.events.append((kind, data))


def test_the_gates_decisions_are_logged_only_for_the_attempt_that_ran_through(tmp_path):
    s = planmod.scale(profiles.get("quick"))
    stalled = _Session(tmp_path / "a")
    with pytest.raises(TimeoutError):
        measure.lvmthin_timeline(_GuestEngine(stall=True), stalled, None, s)
    assert stalled.events == []        # execute_variant measures again, on a new clock
    ran = _Session(tmp_path / "b")
    measure.lvmthin_timeline(_GuestEngine(stall=False), ran, None, s)
    assert [(k, d["learned"], d["runs"]) for k, d in ran.events] == [("learn_done", True, 1)]
    assert measure.host_series_path(ran).is_file()


def test_parameters_read_back_from_the_manifest_and_a_missing_key_is_named():
    params = planmod.parameters(planmod.scale(profiles.get("quick")), {p: p for p in planmod.POOLS}, lvmthin=True)
    assert_round_trip(params)
    assert_missing_is_named(params, "scale.learned_fraction")     # inside the recorded TieringScale


@pytest.mark.committed
def test_every_committed_run_s_parameters_load_with_what_older_runs_ran_with(monkeypatch):
    """Keys older runs lack get, in record.upgrade, the values those runs ran with (tests/test_upgrade.py); the
    committed runs, the oldest of format 2, all load."""
    runs = committed_parameters(monkeypatch, "tiering", planmod.TieringParameters)
    newest = runs[max(runs)]
    assert all(r.scale.span_model_ios > 0 for r in runs.values())
    assert newest.scale.span_model_ios == planmod.scale(profiles.get("quick")).span_model_ios


def test_the_coverage_sweep_spans_qemus_least_cache_to_every_table_in_whole_slices_at_full_only():
    full = planmod.scale(profiles.get("full"))
    assert full.coverage_sweep == planmod.SWEEP_COVERAGES and not planmod.scale(profiles.get("quick")).coverage_sweep
    realised = [planmod.realised_coverage(c, full.disk_bytes) for c in full.coverage_sweep]
    assert realised == list(full.coverage_sweep)          # each a whole number of the disk's 4 KiB slices
    assert realised[0] == Fraction(2, 24) and realised[-1] == 1      # QEMU's two slices of 24, and every table
    # the seed system's bound lies inside the sweep
    assert any(c <= planmod.HEAP_BOUND < d for c, d in zip(realised, realised[1:], strict=False))


def test_the_sweep_names_its_phases_and_variants_and_reads_them_back():
    assert planmod.sweep_variant(0) == "sas_pool.sweep" and planmod.sweep_variant(2) == "sas_pool.sweep@r2"
    assert planmod.engine_of("sas_pool.sweep@r2") == planmod.SWEEP and planmod.pool_of("sas_pool.sweep") == "sas_pool"
    assert planmod.sweep_phase("with", Fraction(1, 12)) == "with-1-12"
    assert planmod.sweep_coverage("with-1-12") == ("with", Fraction(1, 12))
    assert planmod.sweep_coverage("settle-1-1") == ("settle", Fraction(1))
    assert all(planmod.sweep_coverage(p) is None for p in ("with", "initial", "with-x-2", "after-1-2", "with-1-0"))


def test_the_sweep_goes_up_in_even_replicates_and_down_in_odd_ones():
    s = planmod.scale(profiles.get("full"))
    assert planmod.sweep_order(s, 0) == s.coverage_sweep
    assert planmod.sweep_order(s, 1) == tuple(reversed(s.coverage_sweep))
    assert planmod.sweep_order(s, 2) == s.coverage_sweep


@pytest.mark.parametrize("sweep", [(Fraction(1, 2), Fraction(1, 4)), (Fraction(0),), (Fraction(3, 2),),
                                   (Fraction(1, 2), Fraction(1, 2))])
def test_a_sweep_out_of_order_or_range_is_refused(sweep):
    with pytest.raises(ConfigError, match="coverage_sweep"):
        dataclasses.replace(planmod.scale(profiles.get("full")), coverage_sweep=sweep)


def test_the_sweep_adds_its_runs_and_time_to_the_plan():
    s = planmod.scale(profiles.get("full"))
    without = dataclasses.replace(s, coverage_sweep=())
    per = 10 + 2 * s.phase_s * s.untiered_factor + len(s.coverage_sweep) * (
        (s.settle_s + s.with_s) * s.untiered_factor + planmod.SWEEP_POINT_OVERHEAD_S)
    assert planmod.estimated_seconds(s) - planmod.estimated_seconds(without) == pytest.approx(per * s.replicates)
    assert planmod.planned_points(s) - planmod.planned_points(without) == (3 + 2 * 5) * s.replicates


def test_the_redo_log_caches_the_stand_ins_coverage_and_the_preset_every_table():
    s = planmod.scale(profiles.get("quick"))
    preset = planmod.qcow2_config(s)
    assert preset.name == "in-memory-metadata" and preset.l2_cache_size >= preset.l2_bytes_for(s.disk_bytes)
    at = planmod.qcow2_config(s, Fraction(1, 6))
    assert at.name == "v7000-redo-log" and at.l2_cache_size == preset.l2_bytes_for(s.disk_bytes) // 6
    assert (at.cluster_size, at.extended_l2) == (preset.cluster_size, preset.extended_l2)
    params = planmod.parameters(s, {p: p for p in planmod.POOLS}, lvmthin=True, coverage=Fraction(1, 6))
    assert params.qcow2 == "v7000-redo-log" and params.operating_points == ()
