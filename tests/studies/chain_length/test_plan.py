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
    chains = [n for _, m, n in plan.measurements() if m.phase != "prefill"]
    assert chains[0] == 0 and chains[-1] == 0
    per_point = p.repeats * len(planmod.WORKLOADS)
    assert len(chains) == per_point * (2 * p.max_chain + 1)
    assert {m.job.rw for _, m, _ in plan.measurements() if m.phase == "create"} == {"randrw", "readwrite"}
    assert sum(isinstance(s, TakeSnapshot) for s in plan.steps) == p.max_chain
    assert study.points() == 2 * (len(chains) + 1)


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
