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


def predictions(fit, sas):
    return {v.key: v for v in (Value("tiering.predict.hdd_fit_over_model", fit[0], "%", fit[1], fit[2]),
                               Value("tiering.predict.sas_with_over_hdd", sas[0], "%", sas[1], sas[2]))}


def test_the_mix_predictions_are_described_as_their_intervals_came_out():
    held = clauses.tiering_mix_predictions(predictions((105, 89, 121), (99, 84, 115)))
    assert held.startswith("both intervals include 100 %") and held.endswith("does not resolve such an effect")
    below = clauses.tiering_mix_predictions(predictions((88, 77, 99), (83, 72, 94)))
    assert below.startswith("the first interval lies below 100 % and the second lies below 100 %: the simple mix does "
                            "not account for the tiered pool's seconds")
    assert "the opposite of such an effect" in below
    above = clauses.tiering_mix_predictions(predictions((130, 115, 145), (99, 84, 115)))
    assert "not account for every one of" in above and "as such an effect would make it" in above
    single = {**predictions((105, 89, 121), (99, 84, 115)),
              "tiering.predict.sas_with_over_hdd": Value("tiering.predict.sas_with_over_hdd", 99.0, "%")}
    assert "neither is decided" in clauses.tiering_mix_predictions(single)
    assert clauses.tiering_mix_predictions({}) == "this build's tiering run has no tests of the mix"
    # at an operating point below every table the serialised lookups are named as a second effect; not at 1
    at = {**predictions((130, 115, 145), (99, 84, 115)), "tiering.stand_in.coverage":
          Value("tiering.stand_in.coverage", 0.375, "")}
    assert clauses.tiering_mix_predictions(at).endswith("serialise under its lock, for which the mix has no term "
                                                        "either")
    at["tiering.stand_in.coverage"] = Value("tiering.stand_in.coverage", 1.0, "")
    assert "serialise" not in clauses.tiering_mix_predictions(at)


REASON = "the 90 % interval of the error is not within ±10 % at qcow2 with"


def heldout(error, verdict="descriptive only", reason=REASON):
    return {v.key: v for v in (Value("tiering.misplacement.heldout.error", error[0], "%", error[1], error[2]),
                               Value("tiering.misplacement.heldout.bound", 10.0, "%"),
                               Value("tiering.misplacement.heldout.verdict", text=verdict),
                               Value("tiering.misplacement.heldout.reason", text=reason))}


def test_the_heldout_test_refutes_only_when_the_worst_interval_lies_beyond_the_bound():
    assert clauses.tiering_heldout(heldout((448, 437, 459))).startswith(
        "the share of I/O on flash does not by itself give")
    wide = clauses.tiering_heldout(heldout((-69, -91, 12)))
    assert wide.startswith("the share of I/O on flash is not shown to give") and "at qcow2 with)" in wide
    assert wide.endswith("are what-ifs of the model, not predictions")
    assert clauses.tiering_heldout(heldout((3, -2, 8), verdict="predicts")).endswith("are predictions of the model")
    assert clauses.tiering_heldout({}) == "this build's tiering run has no held-out test"


def test_the_qcow2_write_ratios_are_described_by_where_their_intervals_lie():
    def ratios(first_low):
        return {k: Value(k, 1.0, "", first_low if i == 0 else 0.9, 1.1)
                for i, (k, _) in enumerate(clauses.QCOW2_RATIOS)}
    assert clauses.engines_qcow2(ratios(0.9)) == \
        "none of the four qcow2 intervals resolves a slowdown (each includes 1)"
    slower = {**ratios(0.9), "engines.first_ratio.qcow2-c64k": Value("engines.first_ratio.qcow2-c64k", 0.58, "",
                                                                       0.53, 0.64)}
    assert clauses.engines_qcow2(slower) == (
        "of the four qcow2 intervals, the one for 64 KiB clusters during first writes lies below 1 (a slowdown), and "
        "those for 64 KiB clusters after first writes, extended L2 during first writes and extended L2 after first "
        "writes include 1 (no slowdown resolved)")


def verdicts(**changed):
    """The held-out verdicts the body's discussion reads, as the committed runs give them, with some changed."""
    keys = {"copy": "db_snapshots.copy_work.heldout.verdict", "seek": "lifecycle.seek.heldout.verdict",
            **dict(zip(("chain", "metadata_cache", "consolidation", "dump_after", "tiering"),
                       (key for key, _, _ in clauses.OTHER_MODELS), strict=True))}
    said = {name: "descriptive only" for name in keys} | {"copy": "predicts", "seek": "predicts"} | changed
    return {keys[name]: Value(keys[name], text=verdict) for name, verdict in said.items()}


def test_the_models_that_predict_are_those_whose_verdict_says_so():
    assert clauses.heldout_predicting(verdicts()) == (
        "the copy-work model of a database snapshot's duration and the seek-span model")
    assert clauses.heldout_predicting(verdicts(seek="descriptive only")) == (
        "the copy-work model of a database snapshot's duration")
    assert clauses.heldout_predicting(verdicts(copy="descriptive only", seek="descriptive only")) == "none"
    # a model tested per configuration counts the tests it passed
    per = {f"chain_length.chain.heldout.{c}.verdict": Value(f"chain_length.chain.heldout.{c}.verdict", text=v)
           for c, v in (("a.randrw", "predicts"), ("b.randrw", "descriptive only"))}
    assert clauses.heldout_predicting(per) == "the chain model (in 1 of its 2 tests)"


def test_the_paragraph_on_the_other_models_says_each_verdict_as_it_came_out():
    """The body's 'Where we draw no advice': no heading or sentence presumes a verdict; the rules not drawn are
    those of the models that do not predict."""
    out = clauses.heldout_others(verdicts())
    assert out == ("the chain model for the random job with on-disk metadata, the metadata-cache cost model, the "
                   "consolidation model for a commit's duration, the mirror's dump-time model with the wait after "
                   "the write and the misplacement model were descriptive only; we draw no rule from a model that "
                   "does not predict: not a cache size, not a safe write rate for a deletion, not a tier speed"
                   + UNTESTED_ADVICE)
    one = clauses.heldout_others(verdicts(metadata_cache="predicts"))
    assert one.startswith("the chain model for the random job with on-disk metadata, the consolidation model")
    assert ("; the metadata-cache cost model predicted the data it was not fitted to, though this paper draws no "
            "advice from it;") in one
    assert "not a cache size" not in one and one.endswith("not a safe write rate for a deletion, not a tier speed"
                                                          + UNTESTED_ADVICE)
    every = clauses.heldout_others(verdicts(**{name: "predicts" for name in
                                               ("chain", "metadata_cache", "consolidation", "dump_after", "tiering")}))
    assert "descriptive" not in every and "no rule" not in every and "draws no advice from them" in every
    missing = clauses.heldout_others({})
    assert missing.endswith("were not tested in this build; we draw no rule from a model that does not predict: not "
                            "a cache size, not a safe write rate for a deletion, not a tier speed" + UNTESTED_ADVICE)


UNTESTED_ADVICE = ("; and this build leaves out the advice the discussion draws from the copy-work model of a "
                   "database snapshot's duration (not tested in this build) and the seek-span model (not tested in "
                   "this build)")


def advice(model: str, verdict: str, error: tuple[float, float, float]) -> dict[str, Value]:
    est, lo, hi = error
    return {v.key: v for v in (Value(f"{model}.heldout.verdict", text=verdict),
                               Value(f"{model}.heldout.error", est, "%", lo, hi, 3, 1),
                               Value(f"{model}.heldout.bound", 10.0, "%"))}


def test_the_paragraph_names_the_advice_this_build_leaves_out_and_why():
    """An advice paragraph that prose.advice_holds drops (its model's held-out error not within the bound) is named
    in 'Where we draw no advice' with the error that decided it; one that holds is not."""
    holds = advice("lifecycle.seek", "predicts", (-3.4, -6.5, -0.3))
    fails = advice("db_snapshots.copy_work", "descriptive only", (-44.0, -52.5, -34.0))
    out = clauses.advice_withheld({**holds, **fails})
    assert out == ("the copy-work model of a database snapshot's duration (its held-out error "
                   "-44.0 [-52.5, -34.0]\u2009% against a bound of \u00b110\u2009%)")
    assert clauses.advice_withheld({**holds, **advice("db_snapshots.copy_work", "predicts", (2.0, -1.0, 5.0))}) == ""


def test_the_sweep_clause_says_what_the_sweep_found_and_where_the_point_lies_against_the_bound():
    from fractions import Fraction as F

    from tests.studies.tiering.test_coverage import _values
    _, inside = _values({F(1, 12): [8.0, 8.2, 7.8], F(1, 6): [16.0, 16.4, 15.6], F(1): [90.0, 91.0, 89.0]})
    said = clauses.tiering_sweep(inside)
    assert said.startswith("a sweep of the redo log's cache on this pool (3 replicates) kept 8.0 [")
    assert "with 1/12 of the tables cached and 90.0 [" in said and "with every table;" in said
    assert said.endswith("of the tables cached, a point within the 0.24 that the seed system's metadata heap can hold "
                         "at most")
    _, above = _values({F(1, 12): [10.0, 10.0], F(1, 4): [10.5, 10.7], F(1, 2): [14.0, 14.2], F(1): [91.0, 91.0]})
    assert clauses.tiering_sweep(above).endswith("a point above the 0.24 that the seed system's metadata heap can hold "
                                                 "at most")
    _, below = _values({F(1, 12): [40.0, 41.0], F(1): [90.0, 91.0]})
    assert "; the crossing of the seed's 12.2\u2009% lies below the sweep's least coverage: even" in \
        clauses.tiering_sweep(below)
    _, never = _values({F(1, 12): [5.0, 5.2], F(1): [9.0, 9.4]})
    assert clauses.tiering_sweep(never).endswith("lies above the sweep's greatest coverage")
    _, one = _values({F(1): [90.0, 91.0]})                 # smoke's one-point sweep: nothing is read off it
    assert clauses.tiering_sweep(one).endswith("with every table cached, one share only, so no share of the tables "
                                               "is read off it")
    assert clauses.tiering_sweep({}).startswith("no sweep of the redo log's cache was measured")


def test_the_sweep_clause_quotes_the_arrays_queue_where_the_run_has_it():
    from fractions import Fraction as F

    from tests.studies.tiering.test_coverage import _values
    _, v = _values({F(1, 12): [10.0, 10.0], F(1, 4): [10.5, 10.7], F(1, 2): [14.0, 14.2], F(1): [91.0, 91.0]})
    assert "the array held" not in clauses.tiering_sweep(v)          # the synthetic run counted no queue
    k = "tiering.sweep"
    v[f"{k}.least.device_queue"] = Value(f"{k}.least.device_queue", 1.84, "commands", digits=1)
    assert "the array held" not in clauses.tiering_sweep(v)          # nor its initial queue and busy share
    v |= {f"{k}.least.device_queue": Value(f"{k}.least.device_queue", 1.84, "commands", digits=1),
          f"{k}.initial_device_queue": Value(f"{k}.initial_device_queue", 15.7, "commands", digits=1),
          f"{k}.least.member_busy_pct": Value(f"{k}.least.member_busy_pct", 26.2, "%", digits=0)}
    assert ("(with the least cache the array held 1.8 commands on average, against 15.7 in the initial run, and its "
            "members were busy 26\u2009% of the time)") in clauses.tiering_sweep(v)


def test_the_introductions_sweep_finding_needs_a_sweep_of_several_shares_with_its_queue():
    from fractions import Fraction as F

    from tests.studies.tiering.test_coverage import _values
    _, v = _values({F(1, 12): [9.0, 9.4], F(1): [91.0, 92.0]})
    none = "this build's tiering run has no sweep of the cache to show it"
    assert clauses.tiering_sweep_finding(v) == none                  # no queue counted
    k = "tiering.sweep"
    v |= {f"{k}.least.device_queue": Value(f"{k}.least.device_queue", 1.84, "commands", digits=1),
          f"{k}.initial_device_queue": Value(f"{k}.initial_device_queue", 15.5, "commands", digits=1)}
    said = clauses.tiering_sweep_finding(v)
    assert said.startswith("with 1/12 of the map cached the load kept 9.2 [")
    assert said.endswith("while the array held 1.8 commands on average, against 15.5 without the snapshot")
    _, one = _values({F(1): [90.0, 91.0]})
    assert clauses.tiering_sweep_finding(one | {key: v[key] for key in (f"{k}.least.device_queue",
                                                                        f"{k}.initial_device_queue")}) == none
    assert clauses.tiering_sweep_finding({}) == none
