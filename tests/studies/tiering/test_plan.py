"""The tiering plan: the seed's IOmeter pattern, a disk scaled from the seed's, phases that fit between two tiering
cycles of the rig's tier_pool, and scales that refuse what cannot be measured."""
import dataclasses

import pytest

from snaptax import profiles, rig as rigmod
from snaptax.errors import ConfigError
from snaptax.spindle.rigfiles import parse_device
from snaptax.studies.tiering import measure, plan as planmod


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
def test_lvmthin_learning_runs_are_segments(name):
    # the guest's script cannot wait on the pool's counters: learning is fixed runs, judged afterwards per segment
    s = planmod.scale(profiles.get(name))
    plan = planmod.lvmthin_plan(s, planmod.TIERED)
    for phase in ("learn", "relearn"):
        runs = [m for _, m, _ in plan.measurements() if m.phase == phase]
        assert len(runs) > 1 and all(m.job.runtime_s <= s.guest_segment_s for m in runs)


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


def test_a_scale_without_lvmthin_learning_is_refused():
    with pytest.raises(ConfigError, match="guest_learn_s"):
        dataclasses.replace(planmod.scale(profiles.get("quick")), guest_learn_s=0)


@pytest.mark.parametrize("name", ["quick", "full"])
@pytest.mark.parametrize("start_s", [12.0, 20.0, 30.0, 40.0])
def test_the_guests_fixed_learning_holds_a_cycle_end_and_the_next_comes_after_its_after_phase(name, start_s):
    # The pool's cycles end every cycle_s from the emulator's start; the guest's learning starts start_s later
    # (boot, LVM set-up, fill: about 30 s in the runs of 2026-11-26). Each guest run costs GUEST_FIO_START_S more
    # than its fio time, and lvcreate/lvremove about a second each.
    s = planmod.scale(profiles.get(name))
    rig = rigmod.load("local")
    cycle = parse_device(measure.pool_devices(rig)[planmod.TIERED].spindle, rig.source).cycle_s
    plan = planmod.lvmthin_plan(s, planmod.TIERED)
    t, learn_end, after_end, relearn_end = start_s, 0.0, 0.0, 0.0
    for _, m, _ in plan.measurements():
        if m.phase == "fill":
            continue
        t += m.job.runtime_s + planmod.GUEST_FIO_START_S + (1.0 if m.phase in ("settle", "after") else 0.0)
        if m.phase == "learn":
            learn_end = t
        if m.phase == "after":
            after_end = t
        if m.phase == "relearn":
            relearn_end = t
    last_cycle_in_learning = cycle * (learn_end // cycle)
    assert start_s < last_cycle_in_learning <= learn_end
    assert after_end + 5 < last_cycle_in_learning + cycle <= relearn_end - 5
