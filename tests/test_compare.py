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


def results(run_id: str, loss: Value) -> DerivedValues:
    r = DerivedValues("s", run_id, "local", "quick")
    r.add([loss, Value("s.run.id", text=run_id), Value("s.label", text="x")])
    r.claims = [Outcome(CLAIM, loss).to_json()]
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
                    (c, judged("s.loss", 20, 15, 25, 4))):
        _derived(d, results(d.name, loss), monkeypatch, tmp_path)

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
    """Each study's two newest committed quick runs (a run and its rerun) compare; the report covers every claim
    (or, for a study with none, its values)."""
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
        assert len(c.verdicts) == len(derived.values_of(runs[-1]).claims)
        assert c.verdicts or any(v.comparable for v in c.values), study.id
        out = subprocess.run([sys.executable, "-m", "snaptax", "compare", str(runs[-2]), str(runs[-1])],
                             capture_output=True, text=True, cwd=paths.REPO_ROOT, timeout=120, env=env)
        assert out.returncode == (0 if c.reproduced else 1), out.stderr
