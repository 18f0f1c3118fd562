import pytest

from snaptax.fio import FioJob
from snaptax.plan import DeleteSnapshot, Measure, Plan, TakeSnapshot

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
