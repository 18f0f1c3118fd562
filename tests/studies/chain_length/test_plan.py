"""The chain-length plan: pairs sized from the measured spread, the chain built up and torn down."""
import pytest

from snaptax import profiles
from snaptax.errors import ConfigError
from snaptax.plan import TakeSnapshot, split_replicate
from snaptax.stats import repeats_for
from snaptax.studies.chain_length import plan as planmod
from tests.parameters import assert_missing_is_named, assert_round_trip, committed_parameters


def test_plan_builds_up_and_tears_down_the_chain():
    p = profiles.get("smoke")
    s = planmod.scale(p)
    study = planmod.build_plan(p)
    assert [v.variant for v in study.variants] == ["on-disk-metadata", "in-memory-metadata", planmod.LVM_THIN]
    assert [v.variant for v in planmod.build_plan(p, lvmthin=False).variants] == ["on-disk-metadata",
                                                                                  "in-memory-metadata"]
    plan = study.variants[0].plan
    assert plan.max_chain_length == s.max_chain
    sweep = [(m.phase, m.job.name, n) for _, m, n in plan.measurements() if m.phase in ("create", "delete")]
    # every job at each length, then the deletes: the mirror job only
    assert sweep[0] == ("create", "randrw", 1) and sweep[-1] == ("delete", "mirror", 0)
    assert max(n for *_, n in sweep) == s.max_chain
    jobs = len(planmod.WORKLOADS)
    assert len(sweep) == (jobs + 1) * s.max_chain + (s.max_chain - 1) + p.repeats
    # the mirror job has no pairs: its "before" is one run without a snapshot beside each pair
    before = [(m.job.name, m.repeat, n) for _, m, n in plan.measurements() if m.phase == planmod.BEFORE]
    assert before == [(planmod.MIRROR, k, 0) for k in range(s.pairs)]
    assert {j for phase, j, _ in sweep if phase == "create"} == {"randrw", "readwrite", "mirror"}
    assert {j for phase, j, _ in sweep if phase == "delete"} == {"mirror"}
    mirror = next(m.job for _, m, _ in plan.measurements() if m.job.name == planmod.MIRROR)
    assert (mirror.bs, mirror.percentage_random, mirror.rw, mirror.iodepth, mirror.numjobs) == (
        16 << 10, 50, "randrw", 32, 4)                                   # seed 001's job for figures 5 and 6
    assert sum(isinstance(x, TakeSnapshot) for x in plan.steps) == s.max_chain + jobs * s.pairs
    assert {m.job.runtime_s for _, m, _ in plan.measurements() if m.phase != "prefill"} == {s.runtime_s}


def test_pairs_are_neighbours_in_time_in_alternating_order():
    """Each pair is one job's no-snapshot run and its one-snapshot twin with nothing measured between them; the
    order alternates from pair to pair."""
    plan = planmod.variant_plan(profiles.get("quick"))
    k = planmod.scale(profiles.get("quick")).pairs
    seq = [(m.repeat, m.job.name, n) for _, m, n in plan.measurements() if m.phase == "pair"]
    assert len(seq) == 2 * len(planmod.WORKLOADS) * k
    for i in range(0, len(seq), 2):
        (r1, j1, n1), (r2, j2, n2) = seq[i], seq[i + 1]
        assert r1 == r2 and j1 == j2 and {n1, n2} == {0, 1}
        assert (n1, n2) == ((0, 1) if r1 % 2 == 0 else (1, 0))


def test_the_guest_raw_runs_sit_before_every_second_pair():
    """The LVM thin variant runs the same jobs on the guest's flat volume right before the no-snapshot run of every
    even pair (a paired ratio thin ÷ raw), after prefilling it like the thin volume."""
    p = profiles.get("quick")
    plan = planmod.build_plan(p).variant(planmod.LVM_THIN).plan
    steps = [m for _, m, _ in plan.measurements()]
    assert [(m.phase, m.target) for m in steps[:2]] == [("prefill", "live"), ("prefill", "flat")]
    raw = [i for i, m in enumerate(steps) if m.phase == "guest-raw"]
    assert len(raw) == len(planmod.WORKLOADS) * (planmod.scale(p).pairs // 2)
    for i in raw:
        nxt = steps[i + 1]
        assert steps[i].target == "flat" and (nxt.phase, nxt.repeat, nxt.job.name, nxt.target) == (
            "pair", steps[i].repeat, steps[i].job.name, "live") and steps[i].repeat % 2 == 0
    config = planmod.lvmthin_config(p)
    assert config.chain == "stack" and config.control_volume and config.pool_factor == planmod.scale(p).max_chain + 1


def test_pairs_needed_grows_with_the_spread():
    k = planmod.pairs_needed()
    assert k % 2 == 0 and k >= repeats_for(planmod.PAIR_LOG_SD, planmod.LOSS_TOLERANCE_PP / 100)
    assert planmod.pairs_needed(0.05) < k < planmod.pairs_needed(0.3)


def test_quick_and_full_judge_over_independent_replicates():
    """Every configuration's whole plan once per replicate, replicate-major, each a variant of its own; two pairs
    per replicate, one in each order."""
    from snaptax.inference import MIN_REPLICATES
    from snaptax.plan import split_replicate

    for name in ("quick", "full"):
        p = profiles.get(name)
        s = planmod.scale(p)
        assert s.replicates >= MIN_REPLICATES and s.pairs % 2 == 0
        names = [v.variant for v in planmod.build_plan(p).variants]
        split = [split_replicate(n) for n in names]
        assert len(set(names)) == len(names) == 3 * s.replicates
        assert [r for _, r in split] == sorted(r for _, r in split)        # replicate-major
        assert {v for v, _ in split} == {"on-disk-metadata", "in-memory-metadata", planmod.LVM_THIN}
    assert planmod.scale(profiles.get("full")).max_chain == 12


def test_a_scale_that_cannot_judge_is_refused():
    with pytest.raises(ConfigError, match="pairs"):
        planmod.ChainScale(pairs=1, max_chain=2, runtime_s=1, ramp_time_s=0, pairs_basis="")


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_configs_put_metadata_on_disk_or_in_memory(name):
    size = profiles.get(name).disk_size
    small, covering = planmod.configs(profiles.get(name))
    tables = small.l2_bytes_for(size)
    assert small.l2_cache_size < tables <= covering.l2_cache_size
    assert small.cluster_size == covering.cluster_size and small.extended_l2 == covering.extended_l2


def test_describe_counts_come_from_the_plan():
    p = profiles.get("quick")
    text = planmod.describe(p)
    study = planmod.build_plan(p)
    assert f"{study.points()} fio runs" in text
    assert f"fio time >= {study.fio_seconds():.0f} s" in text


def test_a_chain_longer_than_the_device_can_hold_is_refused(scratch_rig):
    """The LVM thin row's pool holds a full copy per layer of the longest chain: on a device too small for the
    chain the engine refuses in one line naming the device's capacity, before anything starts."""
    import dataclasses

    from snaptax.engines.lvmthin.engine import LvmThinEngine
    rig = scratch_rig("lvmthin", 2 << 30)
    smoke = profiles.get("smoke")                       # 256 MiB volume, chain of 2: fits in 2 GiB
    LvmThinEngine(rig, rig.device(), planmod.lvmthin_config(smoke), smoke.disk_size)
    longer = dataclasses.replace(planmod.lvmthin_config(smoke), pool_factor=13.0)   # a chain of 12
    with pytest.raises(ConfigError, match=r"capacity.*thin pool") as err:
        LvmThinEngine(rig, rig.device(), longer, smoke.disk_size)
    assert "\n" not in str(err.value)


def test_parameters_read_back_from_the_manifest_and_a_missing_key_is_named():
    params = planmod.parameters(profiles.get("quick"), "ssd")
    assert params.scale.max_chain == planmod.build_plan(profiles.get("quick")).variants[0].plan.max_chain_length
    assert_round_trip(params)
    assert_missing_is_named(params, "scale.runtime_s")     # inside the recorded ChainScale


@pytest.mark.committed
def test_every_committed_run_s_parameters_load(monkeypatch):
    for params in committed_parameters(monkeypatch, "chain_length", planmod.ChainLengthParameters).values():
        assert params.scale.runtime_s > 0 and params.scale.pairs >= 2


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_each_part_is_one_configuration_in_one_replicate_with_its_own_baselines(name):
    """Measured in parts (issue 49.1), each part is one configuration in one replicate (`<configuration>.r<i>`), with
    the no-snapshot runs its ratios are taken against (the pairs' none, the mirror job's 'before', LVM thin's
    guest-raw), so no paired ratio crosses two parts; the parts' plans together are the whole plan."""
    p = profiles.get(name)
    whole = planmod.build_plan(p)
    parts = planmod.parts(p)
    configurations = ("on-disk-metadata", "in-memory-metadata", planmod.LVM_THIN)
    replicates = range(planmod.scale(p).replicates)
    assert parts == tuple(f"{c}.r{r}" for r in replicates for c in configurations)       # the plan's order
    assert planmod.parts(p, lvmthin=False) == tuple(f"{c}.r{r}" for r in replicates for c in configurations[:2])
    together = []
    for part in parts:
        study = planmod.build_plan(p, part=part)
        (v,) = study.variants
        configuration, replicate = split_replicate(v.variant)
        assert part == f"{configuration}.r{replicate}"
        assert v == whole.variant(v.variant)
        pairs = [(m.job.name, m.repeat, n) for _, m, n in v.plan.measurements() if m.phase == "pair"]
        assert {(j, r) for j, r, n in pairs if n == 0} == {(j, r) for j, r, n in pairs if n == 1}
        phases = {m.phase for _, m, _ in v.plan.measurements()}
        assert {"warmup", planmod.BEFORE} <= phases and ("guest-raw" in phases) == (configuration == planmod.LVM_THIN)
        together += study.variants
    assert [v.variant for v in together] == [v.variant for v in whole.variants]
    assert sum(planmod.planned_seconds(p, part=part) for part in parts) == pytest.approx(planmod.planned_seconds(p))


def test_a_full_part_fits_a_measuring_window():
    """At full a part of one replicate plans about a third of what a part of all three did (≈ 93-100 min, ≈ 150 at
    the measured/planned ratio of past runs, at the 150-minute window's edge): at most 40 min of fio time."""
    full = profiles.get("full")
    minutes = {part: planmod.planned_seconds(full, part=part) / 60 for part in planmod.parts(full)}
    assert len(minutes) == 9 and max(minutes.values()) < 40


def test_an_unknown_part_names_the_field_and_the_parts():
    with pytest.raises(ConfigError, match="chain_length study: field 'part': unknown part 'lvm-thin.r0' \\(one of: "
                                          "on-disk-metadata.r0, in-memory-metadata.r0, on-disk-metadata.r1, "):
        planmod.build_plan(profiles.get("quick"), lvmthin=False, part=planmod.LVM_THIN + ".r0")
    with pytest.raises(ConfigError, match="unknown part 'lvm-thin'"):       # a configuration is not a part any more
        planmod.build_plan(profiles.get("quick"), part=planmod.LVM_THIN)
