"""Sentences whose wording depends on what a run found, generated from its values (paper.clause.*), for the places
where the quick and the paper-grade runs come out differently (a fixed sentence would be checked by a
prose.Fact and then be wrong for one of them)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from ..values import Value
from . import heldout, prose
from .heldout import PREDICTS


def saturated_iterative(values: Mapping[str, Value]) -> str:
    """Whether the saturated iterative deletion converged, and where its writer stood against the critical rate r*
    (both from the lifecycle run this build uses). Plain text: the macros escape it."""
    def get(key: str) -> float:
        return values[key].value if key in values else math.nan

    converged = get("lifecycle.saturated.iterative.converged")
    writer = get("lifecycle.saturated.iterative.writer_iops")
    critical = get("lifecycle.model.critical_rate")
    if not math.isfinite(converged):
        return "the saturated iterative deletion has no outcome in this build's runs"
    if converged == 1:
        iterations = get("lifecycle.saturated.iterative.iterations")
        stun = get("lifecycle.saturated.iterative.stun_s")
        return (f"the saturated iterative deletion converged, after {iterations:.0f} iterations and a final stun of "
                f"{stun:.1f} s")
    side = "below" if math.isfinite(writer) and math.isfinite(critical) and writer < critical else "not below"
    why = (" (the model's outcome weighs the threshold against the size the helper tends to as well)"
           if side == "below" else "")
    return f"the saturated iterative deletion did not converge, its guest writing {side} the estimate of r*{why}"


def tiering_mix_predictions(values: Mapping[str, Value]) -> str:
    """What the misplacement model's two refutable predictions found (tiering.predict.hdd_fit_over_model: the fitted
    HDD time per I/O over the array model's; tiering.predict.sas_with_over_hdd: the SAS-only pool's rate with its
    snapshot over the fitted HDD rate), and what the first says of the queueing effect the mix leaves out (an effect
    that would make the fitted HDD time longer, above 100 %); where the run's redo log cached less than every L2
    table (tiering.stand_in.coverage below 1), that its serialised lookups are a second effect the mix leaves out."""
    keys = ("tiering.predict.hdd_fit_over_model", "tiering.predict.sas_with_over_hdd")
    if any(k not in values for k in keys):
        return "this build's tiering run has no tests of the mix"
    fit, sas = (values[k] for k in keys)
    if not (fit.has_interval and sas.has_interval):
        return "this build's tiering run has no interval for both tests of the mix, so neither is decided"
    if fit.includes(100.0) and sas.includes(100.0):
        found = ("both intervals include 100 %: at this run's resolution the simple mix accounts for the tiered "
                 "pool's seconds")
    elif fit.includes(100.0) or sas.includes(100.0):
        found = (f"the first interval {fit.side_of(100)} % and the second {sas.side_of(100)} %: the simple mix does "
                 "not account for every one of the tiered pool's seconds")
    else:
        found = (f"the first interval {fit.side_of(100)} % and the second {sas.side_of(100)} %: the simple mix does "
                 "not account for the tiered pool's seconds")
    if fit.includes(100.0):
        queueing = "this run does not resolve such an effect"
    elif fit.low > 100.0:
        queueing = "this run's first interval lies above 100 %, as such an effect would make it"
    else:
        queueing = ("this run's first interval lies below 100 %, the opposite of such an effect: the mixed seconds' "
                    "HDD-served I/O took less time than the array's model run gives, which the mix does not explain "
                    "either (not traced)")
    point = values.get("tiering.stand_in.coverage")
    if point is not None and math.isfinite(point.value) and point.value < 1:
        queueing += ("; and with less than every L2 table cached, as at this run's operating point, the redo log's "
                     "lookups that miss serialise under its lock, for which the mix has no term either")
    return f"{found}; {queueing}"


def tiering_heldout(values: Mapping[str, Value]) -> str:
    """What the misplacement model's held-out test says of the SSD-served share as the sole predictor, and so what
    the model's rates at the tier's own speed are: refuted when the worst phase's error interval lies wholly beyond
    the bound, only not shown when it is too wide to place; predictions only when the held-out test holds."""
    keys = ("tiering.misplacement.heldout.error", "tiering.misplacement.heldout.bound",
            "tiering.misplacement.heldout.verdict", "tiering.misplacement.heldout.reason")
    if any(k not in values for k in keys[:3]):
        return "this build's tiering run has no held-out test"
    error, bound, verdict = values[keys[0]], values[keys[1]].value, values[keys[2]].text
    if verdict == PREDICTS:
        return ("the share of I/O on flash gave the tiered pool's rate in every held-out phase, so the rates the model "
                "gives at the tier's own speed above are predictions of the model")
    if error.has_interval and (error.low > bound or error.high < -bound):
        found = ("the share of I/O on flash does not by itself give the tiered pool's rate in every phase (the worst "
                 f"phase's interval lies wholly beyond ±{bound:g} %)")
    else:
        reason = values[keys[3]].text if keys[3] in values else None
        found = ("the share of I/O on flash is not shown to give the tiered pool's rate in every phase"
                 + (f" ({reason})" if reason else ""))
    return (f"{found}, so the rates the model gives at the tier's own speed above are what-ifs of the model, not "
            "predictions")


def _share(c: float) -> str:
    """A realised cache share as the fraction of whole slices it is: '1/12'."""
    f = Fraction(c).limit_denominator(4096)
    return f"{f.numerator}/{f.denominator}"


def tiering_sweep(values: Mapping[str, Value]) -> str:
    """What the SAS-only pool's coverage sweep found (tiering.sweep.*, tiering.implied.*: studies/tiering/coverage):
    the share of the initial rate the pool kept with a snapshot at the least cache and with every L2 table, and the
    share of the tables at which that crosses the seed's 12.2 %, against the seed system's own bound on it. A build
    whose tiering run measured no sweep (quick) says so."""
    k = "tiering.sweep"
    keys = (f"{k}.least.keep", f"{k}.greatest.keep", f"{k}.least.coverage", f"{k}.greatest.coverage",
            f"{k}.replicates", "tiering.implied.coverage", "tiering.implied.heap_bound", "tiering.implied.bound")
    if any(key not in values for key in keys):
        return ("no sweep of the redo log's cache was measured in this build's tiering run (quick runs and runs made "
                "before the sweep have none), so no share of cached tables is read off it")
    least, greatest, c_least, c_greatest, n, point, bound, where = (values[key] for key in keys)
    pct = "\u2009%"

    def tables(c: float) -> str:
        return "every table" if c == 1 else f"{_share(c)} of the tables"

    said = (f"a sweep of the redo log's cache on this pool ({n.value:.0f} replicate"
            f"{'s' if n.value != 1 else ''}) kept {least.formatted_ci()}{pct} of the initial rate with "
            f"{tables(c_least.value)} cached and {greatest.formatted_ci()}{pct} with {tables(c_greatest.value)}")
    if c_least.value == c_greatest.value:
        return (f"a sweep of the redo log's cache on this pool kept {least.formatted_ci()}{pct} of the initial rate "
                f"with {tables(c_least.value)} cached, one share only, so no share of the tables is read off it")
    aside = [values[key] for key in (f"{k}.least.device_queue", f"{k}.initial_device_queue",
                                     f"{k}.least.member_busy_pct") if key in values]
    if len(aside) == 3 and all(math.isfinite(x.value) for x in aside):
        queue, queue0, busy = aside
        said += (f" (with the least cache the array held {queue.formatted()} commands on average, against "
                 f"{queue0.formatted()} in the initial run, and its members were busy {busy.formatted()}{pct} of the "
                 "time)")
    if not math.isfinite(point.value):
        return f"{said}; no share of the tables is read off it ({where.text})"
    seed = f"the seed's {values[f'{k}.seed_keep_pct'].formatted()}{pct}"
    if where.text != "inside the sweep":
        return f"{said}; the crossing of {seed} lies {where.text}"
    # decided once, by the study (coverage.heap_bound_side: on the interval, or on the point without one)
    decided = values.get("tiering.implied.within_heap_bound")
    decided_text = (decided.text or "") if decided else ""
    side = {"yes": "a point within the", "no": "a point above the",
            "undecided": "a point whose interval includes the"}.get(decided_text)
    if side is None:
        raise KeyError("tiering.implied.within_heap_bound: the sweep's point has no side of the heap bound "
                       f"({decided_text if decided else 'no value'})")
    alone = "" if point.has_interval else " (one sweep: the point alone, without an interval)"
    return (f"{said}; it crosses {seed} at {point.formatted_ci()} of the tables cached, {side} "
            f"{bound.formatted()} that the seed system's metadata heap can hold at most{alone}")


def tiering_sweep_finding(values: Mapping[str, Value]) -> str:
    """The introduction's short form of the sweep (tiering_sweep): what the least cache kept and the array's queue
    with it, or that the build's run measured no sweep of more than one share."""
    k = "tiering.sweep"
    keys = (f"{k}.least.keep", f"{k}.least.coverage", f"{k}.greatest.coverage", f"{k}.least.device_queue",
            f"{k}.initial_device_queue")
    if any(key not in values for key in keys) or values[keys[1]].value == values[keys[2]].value \
            or not all(math.isfinite(values[key].value) for key in keys[3:]):
        return "this build's tiering run has no sweep of the cache to show it"
    keep, c, queue, queue0 = (values[key] for key in (keys[0], keys[1], keys[3], keys[4]))
    return (f"with {_share(c.value)} of the map cached the load kept {keep.formatted_ci()}\u2009% of its "
            f"rate while the array held {queue.formatted()} commands on average, against {queue0.formatted()} "
            "without the snapshot")

# The engines study's four qcow2 write ratios the prose reads: (value key, what it is in words)
QCOW2_RATIOS = (("engines.first_ratio.qcow2-c64k", "64 KiB clusters during first writes"),
                ("engines.steady_ratio.qcow2-c64k", "64 KiB clusters after first writes"),
                ("engines.first_ratio.qcow2-c64k-ext", "extended L2 during first writes"),
                ("engines.steady_ratio.qcow2-c64k-ext", "extended L2 after first writes"))


def engines_qcow2(values: Mapping[str, Value]) -> str:
    """Which of qcow2's four write-time ratios (with a snapshot over without) show a slowdown (the interval below
    1), a speed-up (above) or neither (it includes 1)."""
    sides: dict[str, list[str]] = {}
    for key, words in QCOW2_RATIOS:
        side = values[key].side_of(1) if key in values else "has no interval"
        sides.setdefault(side, []).append(words)
    if list(sides) == ["includes 1"]:
        return "none of the four qcow2 intervals resolves a slowdown (each includes 1)"
    meaning = {"lies below 1": ("lies below 1 (a slowdown)", "lie below 1 (a slowdown)"),
               "includes 1": ("includes 1 (no slowdown resolved)", "include 1 (no slowdown resolved)"),
               "lies above 1": ("lies above 1", "lie above 1"),
               "has no interval": ("has no interval", "have no interval")}
    said = [f"the one for {words[0]} {meaning[side][0]}" if len(words) == 1 else
            f"those for {', '.join(words[:-1])} and {words[-1]} {meaning[side][1]}" for side, words in sides.items()]
    return "of the four qcow2 intervals, " + ", and ".join(said)


# The models the body's discussion names besides those it draws advice from (prose.ADVICE_MODELS), each by the
# held-out test the body quotes: (its verdict's key, the model and the test in words, the rule the paper would draw
# from it if it predicted: '' none). Their verdicts are generated (heldout_others), not presumed by the heading.
OTHER_MODELS = (
    ("chain_length.chain.heldout.on-disk-metadata.randrw.verdict",
     "the chain model for the random job with on-disk metadata", ""),
    ("metadata_cache.cost.heldout.verdict", "the metadata-cache cost model", "a cache size"),
    ("lifecycle.consolidation.heldout.commit.verdict", "the consolidation model for a commit's duration",
     "a safe write rate for a deletion"),
    ("memory_dump.after.heldout.raid1_10k.verdict", "the mirror's dump-time model with the wait after the write", ""),
    ("tiering.misplacement.heldout.verdict", "the misplacement model", "a tier speed"),
)
NOT_TESTED = "not tested in this build"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def heldout_predicting(values: Mapping[str, Value]) -> str:
    """The models whose held-out verdict is 'predicts' (every held-out test of the build, heldout.rows), named in
    words, the tests they passed counted where a model has several; 'none' when no test predicts. The discussion's
    advice is drawn from these alone."""
    tests: dict[tuple[str, str], list[bool]] = {}
    for r in heldout.rows(values):
        tests.setdefault((r.study, r.model), []).append(r.text("verdict") == PREDICTS)
    names = []
    for (study, model), passed in tests.items():
        if any(passed):
            name = heldout.model_prose(study, model)
            names.append(name if len(passed) == 1 else f"{name} (in {sum(passed)} of its {len(passed)} tests)")
    return _join(names) if names else "none"


def heldout_others(values: Mapping[str, Value]) -> str:
    """The discussion's paragraph on the models it draws no advice from (OTHER_MODELS), after 'Held out,': each
    one's held-out verdict as it came out, those with the same verdict together, and the rules not drawn from those
    that do not predict (a model that does predict is said to, and that the paper draws no advice from it)."""
    verdicts: dict[str, list[str]] = {}
    rules = []
    for key, words, rule in OTHER_MODELS:
        v = values.get(key)
        verdict = v.text if v is not None and v.text else NOT_TESTED
        verdicts.setdefault(verdict, []).append(words)
        if verdict != PREDICTS and rule:
            rules.append(rule)
    said = []
    for verdict, names in verdicts.items():
        one = len(names) == 1
        if verdict == PREDICTS:
            said.append(f"{_join(names)} predicted the data {'it was' if one else 'they were'} not fitted to, though "
                        f"this paper draws no advice from {'it' if one else 'them'}")
        else:
            said.append(f"{_join(names)} {'was' if one else 'were'} {verdict}")
    out = "; ".join(said)
    if rules:
        out += f"; we draw no rule from a model that does not predict: not {', not '.join(rules)}"
    withheld = advice_withheld(values)
    if withheld:
        out += f"; and this build leaves out the advice the discussion draws from {withheld}"
    return out


def advice_withheld(values: Mapping[str, Value]) -> str:
    """The models of prose.ADVICE_MODELS whose advice paragraph this build leaves out (prose.advice_holds is
    false), each with the held-out error and bound that decided it; '' when every one holds. A paragraph that is
    not typeset is named here, so a reader of a build without it learns why."""
    out = []
    for model in prose.ADVICE_MODELS:
        if prose.advice_holds(values, model):
            continue
        study, name = model.split(".", 1)
        error, bound = values.get(f"{model}.heldout.error"), values.get(f"{model}.heldout.bound")
        said = (f" (its held-out error {error.formatted_ci()}\u2009% against a bound of "
                f"\u00b1{bound.formatted()}\u2009%)" if error is not None and bound is not None
                and error.has_interval else " (not tested in this build)")
        out.append(heldout.model_prose(study, name) + said)
    return _join(out) if out else ""


def clause_values(values: Mapping[str, Value]) -> list[Value]:
    """paper.clause.*: the generated sentences (each says so when the run lacks the values it reads)."""
    return [Value("paper.clause.saturated_iterative", text=saturated_iterative(values)),
            Value("paper.clause.tiering_mix_predictions", text=tiering_mix_predictions(values)),
            Value("paper.clause.tiering_heldout", text=tiering_heldout(values)),
            Value("paper.clause.tiering_sweep", text=tiering_sweep(values)),
            Value("paper.clause.tiering_sweep_finding", text=tiering_sweep_finding(values)),
            Value("paper.clause.engines_qcow2", text=engines_qcow2(values)),
            Value("paper.clause.heldout_predicting", text=heldout_predicting(values)),
            Value("paper.clause.heldout_others", text=heldout_others(values))]


__all__ = ["saturated_iterative", "tiering_mix_predictions", "tiering_heldout", "tiering_sweep",
           "tiering_sweep_finding", "engines_qcow2", "OTHER_MODELS", "heldout_predicting", "heldout_others",
           "advice_withheld", "clause_values"]
