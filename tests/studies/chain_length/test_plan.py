"""The chain-length plan: builds the chain up and tears it down, for both metadata presets."""
import pytest

from snaptax import profiles
from snaptax.plan import TakeSnapshot
from snaptax.studies.chain_length import plan as planmod


def test_plan_builds_up_and_tears_down_the_chain():
    p = profiles.get("smoke")
    study = planmod.build_plan(p)
    assert [v.variant for v in study.variants] == ["on-disk-metadata", "in-memory-metadata"]
    plan = study.variants[0].plan
    assert plan.max_chain_length == p.max_chain
    sweep = [(m.phase, n) for _, m, n in plan.measurements() if m.phase in ("create", "delete")]
    assert sweep[0] == ("create", 0) and sweep[-1] == ("delete", 0)
    assert max(n for _, n in sweep) == p.max_chain
    jobs = len(planmod.WORKLOADS)
    assert len(sweep) == jobs * (2 * p.repeats + 2 * p.max_chain - 1)
    assert {m.job.rw for _, m, _ in plan.measurements() if m.phase == "create"} == {"randrw", "readwrite"}
    assert sum(isinstance(s, TakeSnapshot) for s in plan.steps) == p.max_chain + planmod.PAIRS[p.name]


def test_pairs_are_neighbours_in_time():
    """Each no-snapshot run of a pair is followed directly by the snapshot and its one-snapshot twin."""
    plan = planmod.variant_plan(profiles.get("quick"))
    seq = [(m.phase, m.repeat, m.job.name, n) for _, m, n in plan.measurements() if m.phase == "pair"]
    k = planmod.PAIRS["quick"]
    assert len(seq) == 2 * 2 * k
    for i in range(k):
        block = seq[4 * i:4 * i + 4]
        assert [n for *_, n in block] == [0, 0, 1, 1] and {r for _, r, _, _ in block} == {i}


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
