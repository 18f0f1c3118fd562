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
