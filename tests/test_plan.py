import pytest

from snaptax.errors import ConfigError
from snaptax.fio import FioJob
from snaptax.plan import DeleteSnapshot, Measure, Plan, StudyPlan, TakeSnapshot, VariantPlan

JOB = FioJob("j", "randrw", runtime_s=2, ramp_time_s=1)


def test_measurements_carry_the_chain_length_at_their_step():
    plan = Plan((Measure(JOB, "create"), TakeSnapshot(), TakeSnapshot(), Measure(JOB, "create"),
                 DeleteSnapshot(), Measure(JOB, "delete")))
    assert [(i, n) for i, _, n in plan.measurements()] == [(0, 0), (3, 2), (5, 1)]
    assert plan.max_chain_length == 2
    assert plan.fio_seconds() == 9


def test_deleting_from_an_empty_chain_is_an_error():
    with pytest.raises(ValueError, match="empty chain"):
        list(Plan((DeleteSnapshot(),)).measurements())


def test_gate_keeper_asks_until_a_gate_closes_and_never_after():
    from snaptax.errors import ConfigError
    from snaptax.fio import FioJob
    from snaptax.plan import GateKeeper, Measure, Plan, TakeSnapshot

    job = FioJob("j", "randread", bs=4096, iodepth=1, size=1 << 20, runtime_s=1)
    steps = [Measure(job, "learn", k, gate="learn") for k in range(4)] + [Measure(job, "after"), TakeSnapshot()]
    asked: list[int] = []

    def gate(name: str, repeat: int) -> bool:
        asked.append(repeat)
        return repeat < 1

    plan = Plan(tuple(steps))
    assert plan.gates == {"learn"} and Plan(tuple(steps[4:])).gates == frozenset()
    keeper = GateKeeper(plan, gate)
    assert [keeper.runs(s) for s in steps] == [True, False, False, False, True, True]
    assert asked == [0, 1] and keeper.closed == {"learn"}
    with pytest.raises(ConfigError, match=r"gate.*\(learn\).*no Gate"):
        GateKeeper(plan, None)      # refused before any step, not when the first gated one is reached
    assert GateKeeper(Plan(tuple(steps[4:])), None).runs(steps[4])


def test_replicate_names_split_back_and_keep_the_first_replicate_s_name():
    from snaptax.plan import replicate_name, replicated, split_replicate

    assert replicate_name("lvm-thin", 0) == "lvm-thin" and split_replicate("lvm-thin") == ("lvm-thin", 0)
    for r in (1, 2, 11):
        assert split_replicate(replicate_name("on-disk-metadata", r)) == ("on-disk-metadata", r)
    assert split_replicate("odd@r") == ("odd@r", 0) and split_replicate("@r2") == ("@r2", 0)
    plan = Plan((TakeSnapshot(),))
    study = replicated(StudyPlan((VariantPlan("a", plan), VariantPlan("b", plan))), 2)
    assert [v.variant for v in study.variants] == ["a", "b", "a@r1", "b@r1"]
    with pytest.raises(ConfigError, match="replicates"):
        replicated(study, 0)


def test_a_study_in_parts_has_one_part_per_configuration_and_replicate_in_the_plan_s_order():
    from snaptax.plan import part_name, replicate_part, replicate_parts, replicated

    plan = Plan((TakeSnapshot(),))
    study = replicated(StudyPlan((VariantPlan("a", plan), VariantPlan("b-1", plan))), 2)
    assert replicate_parts(study) == ("a.r0", "b-1.r0", "a.r1", "b-1.r1")
    assert part_name("b-1@r1") == "b-1.r1" and part_name("a") == "a.r0"
    assert replicate_part(study, None, "s") is study
    assert [v.variant for v in replicate_part(study, "b-1.r1", "s").variants] == ["b-1@r1"]
    with pytest.raises(ConfigError, match=r"s: field 'part': unknown part 'a' \(one of: a.r0, b-1.r0, a.r1, b-1.r1\)"):
        replicate_part(study, "a", "s")


def test_with_replicates_splits_a_frame_s_variants():
    import pandas as pd

    from snaptax.plan import with_replicates

    df = with_replicates(pd.DataFrame({"variant": ["a", "a@r1", "b@r2"], "iops": [1.0, 2.0, 3.0]}))
    assert list(df.variant) == ["a", "a", "b"] and list(df.replicate) == [0, 1, 2]
    assert list(df.recorded_variant) == ["a", "a@r1", "b@r2"]
