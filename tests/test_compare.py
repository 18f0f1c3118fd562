"""compare: values side by side with intervals, verdicts reproduced or not."""
import math
import subprocess
import sys

import pytest

from snaptax import compare, paths
from snaptax.claims import Claim, Outcome
from snaptax.values import DerivedValues, Value
from tests.synthetic import judged

CLAIM = Claim("s.loss", "key", "Table 1", "loss", 65.0, "%", 0.0, 15.0, "test", "s.loss", "x", label="C001-1")
# a claim the committed registration lists (33 % ± 5 pp), for what judges by the runs' registrations (the CLI)
REGISTERED = Claim("chain_bulk.C001-4a", "key", "text", "loss", 33.0, "%", 0.0, 15.0, "test", "s.loss", "x")
AGREES_WITH_REGISTERED = (33, 32, 34)


def results(run_id: str, loss: Value, claim: Claim = CLAIM) -> DerivedValues:
    r = DerivedValues("s", run_id, "local", "quick")
    r.add([loss, Value("s.run.id", text=run_id), Value("s.label", text="x")])
    r.claims = [Outcome(claim, loss).to_json()]
    return r


def test_consistent_runs_reproduce():
    c = compare.compare_derived(results("a", judged("s.loss", 60, 55, 65, 4)),
                                results("b", judged("s.loss", 62, 57, 67, 4)))
    (v,) = [v for v in c.values if v.key == "s.loss"]
    assert v.consistent and v.distance == 2 / math.hypot(5, 5)
    assert c.reproduced and c.verdicts_reproduced == 1 and not c.inconsistent
    assert all(".run." not in v.key for v in c.values)


def test_inconsistent_values_are_reported_even_if_the_verdict_holds():
    c = compare.compare_derived(results("a", judged("s.loss", 55, 53, 57, 4)),
                                results("b", judged("s.loss", 70, 68, 72, 4)))
    assert c.reproduced                                   # both 'agrees'
    assert [v.key for v in c.inconsistent] == ["s.loss"]
    assert "intervals apart" in "\n".join(compare.report(c))


def test_a_verdict_flip_is_not_reproduced():
    c = compare.compare_derived(results("a", judged("s.loss", 60, 55, 65, 4)),
                                results("b", judged("s.loss", 20, 15, 25, 4)))
    assert not c.reproduced
    assert "DIFFERENT" in "\n".join(compare.report(c))


def test_a_repeated_inconclusive_verdict_is_the_same_but_not_a_decided_one():
    wide = (judged("s.loss", 60, 20, 100, 4), judged("s.loss", 61, 21, 101, 4))   # wider than the band
    both_undecided = compare.compare_derived(results("a", wide[0]), results("b", wide[1]))
    assert both_undecided.verdicts_reproduced == 1
    assert both_undecided.decisive == [] and both_undecided.decisive_reproduced == 0
    one_decided = compare.compare_derived(results("a", wide[0]), results("b", judged("s.loss", 62, 57, 67, 4)))
    assert len(one_decided.decisive) == 1 and one_decided.decisive_reproduced == 0
    both_decided = compare.compare_derived(results("a", judged("s.loss", 60, 55, 65, 4)),
                                           results("b", judged("s.loss", 62, 57, 67, 4)))
    assert len(both_decided.decisive) == 1 and both_decided.decisive_reproduced == 1


def _derived(run, r, monkeypatch, tmp_path):
    """A run directory whose derived values are `r`, as snaptax.derived's cache holds them (the CLI, in another
    process, reads the same cache: SNAPTAX_DERIVED_DIR)."""
    from snaptax import derived

    monkeypatch.setenv("SNAPTAX_DERIVED_DIR", str(tmp_path / "derived"))
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    derived.store(run, r)


def test_cli_exits_1_on_a_flip_and_0_otherwise(tmp_path, monkeypatch):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for d, loss in ((a, judged("s.loss", 60, 55, 65, 4)), (b, judged("s.loss", 61, 56, 66, 4)),
                    (c, judged("s.loss", *AGREES_WITH_REGISTERED, 4))):
        _derived(d, results(d.name, loss, REGISTERED), monkeypatch, tmp_path)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "snaptax", "compare", *map(str, args)], capture_output=True,
                              text=True, cwd=paths.REPO_ROOT, timeout=60)
    assert run(a, b).returncode == 0
    flip = run(a, c)
    assert flip.returncode == 1 and "DIFFERENT" in flip.stdout
    assert run(a).returncode == 2


def test_cli_refuses_runs_of_different_studies_in_one_line(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    _derived(a, results("a", judged("s.loss", 60, 55, 65, 4)), monkeypatch, tmp_path)
    other = DerivedValues("t", "b", "local", "quick")
    other.add([judged("t.loss", 60, 55, 65, 4)])
    _derived(b, other, monkeypatch, tmp_path)
    out = subprocess.run([sys.executable, "-m", "snaptax", "compare", str(a), str(b)], capture_output=True,
                         text=True, cwd=paths.REPO_ROOT, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["snaptax: runs of different studies: s and t"]


@pytest.mark.committed
def test_compare_on_the_committed_runs(monkeypatch):
    """Each study's two newest committed quick runs (a run and its rerun) compare; the report covers every claim both
    runs test (a claim the newer run tests for the first time has no earlier verdict; a study with none compares its
    values)."""
    import os

    from snaptax import derived, studies
    from snaptax.record import published_runs

    monkeypatch.delenv("SNAPTAX_DATA_DIR", raising=False)    # the checkout's data/, even inside make test
    env = dict(os.environ)
    for study in studies.REGISTRY:
        runs = published_runs("local", study.id, "quick")
        assert len(runs) >= 2, f"{study.id}: the committed data should hold a quick run and its rerun"
        c = compare.compare_runs(runs[-2], runs[-1])
        # every claim is compared; a study without claims (derived results only) still compares its values
        both = {x["id"] for x in derived.values_of(runs[-2]).claims} & {x["id"] for x in
                                                                       derived.values_of(runs[-1]).claims}
        assert {v.claim for v in c.verdicts} == both, study.id
        assert c.verdicts or any(v.comparable for v in c.values), study.id
        out = subprocess.run([sys.executable, "-m", "snaptax", "compare", str(runs[-2]), str(runs[-1])],
                             capture_output=True, text=True, cwd=paths.REPO_ROOT, timeout=120, env=env)
        assert out.returncode == (0 if c.reproduced else 1), out.stderr


def _published(data_dir, study, name, profile):
    """A run directory that record.published_runs lists (its manifest names the profile)."""
    import json

    run = data_dir / "local" / study / name
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"profile": {"name": profile}}))
    return run


def test_a_rerun_is_compared_with_the_committed_run_of_its_profile(data_dir, monkeypatch):
    """A quick rerun's reference is the newest committed quick run: a smoke run committed later (a smaller plan) is
    never its reference, and committed runs are never compared with each other."""
    names = {"20260101T000000Z-quick": "quick", "20260102T000000Z-quick": "quick", "20260103T000000Z-smoke": "smoke",
             "20260104T000000Z-quick": "quick"}
    runs = {name: _published(data_dir, "chain_length", name, profile) for name, profile in names.items()}
    monkeypatch.setattr(compare, "tracked_run_names", lambda rig, study: set(list(names)[:3]))
    assert compare.reruns("local", "quick", ["chain_length", "engines"]) == [
        compare.Rerun("chain_length", runs["20260104T000000Z-quick"], runs["20260102T000000Z-quick"])]
    assert compare.reruns("local", "smoke", ["chain_length"]) == []          # the smoke run is committed
    monkeypatch.setattr(compare, "tracked_run_names", lambda rig, study: set())
    assert [(r.rerun.name, r.committed) for r in compare.reruns("local", "smoke", ["chain_length"])] == \
        [("20260103T000000Z-smoke", None)]


def test_tracked_runs_are_those_in_gits_index(tmp_path, monkeypatch):
    """What git tracks (committed or staged) is committed data; a run beside it that git does not know is a rerun."""
    repo = tmp_path / "repo"
    monkeypatch.setattr(paths, "REPO_ROOT", repo)
    monkeypatch.setenv("SNAPTAX_DATA_DIR", str(repo / "data"))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _published(repo / "data", "chain_length", "20260101T000000Z-quick", "quick")
    _published(repo / "data", "chain_length", "20260102T000000Z-quick", "quick")
    subprocess.run(["git", "-C", str(repo), "add", "data/local/chain_length/20260101T000000Z-quick"], check=True)
    assert compare.tracked_run_names("local", "chain_length") == {"20260101T000000Z-quick"}
    assert compare.tracked_run_names("local", "engines") == set()
    (r,) = compare.reruns("local", "quick", ["chain_length"])
    assert (r.rerun.name, r.committed.name) == ("20260102T000000Z-quick", "20260101T000000Z-quick")
    assert compare.shown(r.rerun) == "data/local/chain_length/20260102T000000Z-quick"


def test_cli_without_a_rerun_says_so_in_one_line_and_exits_0(data_dir):
    out = subprocess.run([sys.executable, "-m", "snaptax", "compare", "--profile", "quick"], capture_output=True,
                         text=True, cwd=paths.REPO_ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"no rerun to compare: every quick run under {data_dir / 'local'} is "
                                       "committed (a rerun is a run git does not track, e.g. one `make paper` "
                                       "measured)"]
    assert out.stderr == ""


def _compare_cli(*argv):
    from snaptax import cli

    args = cli.parser().parse_args(["compare", *argv])
    return args.func(args)


def test_cli_compares_each_rerun_with_its_committed_run_naming_both(data_dir, tmp_path, monkeypatch, capsys):
    committed = _published(data_dir, "chain_length", "20260101T000000Z-quick", "quick")
    rerun = _published(data_dir, "chain_length", "20260102T000000Z-quick", "quick")
    orphan = _published(data_dir, "engines", "20260102T000000Z-quick", "quick")
    monkeypatch.setenv("SNAPTAX_DERIVED_DIR", str(tmp_path / "derived"))
    from snaptax import derived
    derived.store(committed, results(committed.name, judged("s.loss", 60, 55, 65, 4), REGISTERED))
    derived.store(rerun, results(rerun.name, judged("s.loss", 61, 56, 66, 4), REGISTERED))
    monkeypatch.setattr(compare, "tracked_run_names", lambda rig, study: {committed.name})
    assert _compare_cli("--profile", "quick") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"chain_length: rerun {rerun} (not committed) against the committed run {committed}"
    assert out[1].startswith(f"s: {committed.name} vs {rerun.name}: 1 of 1 verdicts the same")
    assert f"engines: rerun {orphan} has no committed quick run to compare against" in out
    derived.store(rerun, results(rerun.name, judged("s.loss", *AGREES_WITH_REGISTERED, 4), REGISTERED))  # it flips
    assert _compare_cli("--profile", "quick") == 1
    assert "DIFFERENT" in capsys.readouterr().out


def test_given_the_runs_registrations_the_verdicts_are_the_registration_s():
    """A claim the registration does not list is not judged, whatever the analysis's own verdict was."""
    a, b = results("a", judged("s.loss", 60, 55, 65, 4)), results("b", judged("s.loss", 62, 57, 67, 4))
    assert compare.compare_derived(a, b).verdicts[0].a != "not judged"
    (v,) = compare.compare_derived(a, b, (None, None)).verdicts
    assert (v.a, v.b) == ("not judged", "not judged")


def test_runs_at_different_operating_points_are_not_a_rerun_and_say_so():
    from snaptax import operatingpoints as op

    def at(run_id: str, points: str) -> DerivedValues:
        r = results(run_id, judged("s.loss", 60, 55, 65, 4))
        r.add([Value(f"s.run.{op.RUN_VALUE}", text=points)])
        return r

    same = compare.compare_derived(at("a", "vmfs_sesparse=0.921875"), at("b", "vmfs_sesparse=0.921875"))
    assert same.same_operating_points and not any("not a rerun" in line for line in compare.report(same))
    other = compare.compare_derived(at("a", op.NONE), at("b", "vmfs_sesparse=0.921875"))
    assert not other.same_operating_points
    assert "not a rerun: the runs measured at different operating points (none | vmfs_sesparse=0.921875)" in \
        compare.report(other)[1]
    # a run analysed before the run value existed measured at none
    assert compare.operating_points_of(results("c", judged("s.loss", 60, 55, 65, 4))) == op.NONE


def test_an_analysis_that_fails_on_a_run_is_one_line_naming_it(tmp_path, monkeypatch):
    from snaptax import derived
    from snaptax.errors import AnalysisError

    a, b = tmp_path / "a", tmp_path / "b"
    _derived(a, results("a", judged("s.loss", 60, 55, 65, 4)), monkeypatch, tmp_path)
    b.mkdir()
    real = derived.values_of

    def values_of(run):
        if run == b:
            raise KeyError("walker")   # as a part read alone that lacks what every claim reads
        return real(run)

    monkeypatch.setattr(derived, "values_of", values_of)
    with pytest.raises(AnalysisError, match=r"b: its analysis failed \(KeyError: 'walker'\)"):
        compare.compare_runs(a, b)
