"""Sentences generated from what a run found."""
from snaptax.paper import clauses
from snaptax.values import Value


def lifecycle(converged, writer=50.0, critical=80.0):
    return {v.key: v for v in (Value("lifecycle.saturated.iterative.converged", converged, ""),
                               Value("lifecycle.saturated.iterative.writer_iops", writer, "W/s"),
                               Value("lifecycle.model.critical_rate", critical, "W/s", critical - 30, critical + 30),
                               Value("lifecycle.saturated.iterative.iterations", 10.0, ""),
                               Value("lifecycle.saturated.iterative.stun_s", 41.9, "s"))}


def test_the_saturated_iterative_deletion_is_described_as_it_came_out():
    assert clauses.saturated_iterative(lifecycle(1.0)) == \
        "the saturated iterative deletion converged, after 10 iterations and a final stun of 41.9 s"
    below = clauses.saturated_iterative(lifecycle(0.0))
    assert below.startswith("the saturated iterative deletion did not converge, its guest writing below the estimate")
    assert "not below" in clauses.saturated_iterative(lifecycle(0.0, writer=120.0))
    # a build without the lifecycle's values still prints a sentence, saying so
    assert clauses.clause_values({})[0].text == "the saturated iterative deletion has no outcome in this build's runs"
