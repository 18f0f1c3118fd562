"""The paper's table of held-out tests, from Values."""
from snaptax.models import heldout as ho
from snaptax.paper import heldout as paper_heldout
from snaptax.values import Value


def values() -> dict[str, Value]:
    good = ho.judge([ho.point("p1", 100.0, 99.0, 101.0, 10, 101.0, 100.0, 102.0, 5)], 8, "the dump time")
    none = ho.judge([], 6, "nothing", not_tested="three parameters for three levels")
    out = [Value(f"memory_dump.after.heldout.ssd.{k}", **q._asdict()) for k, q in good.quoted().items()]
    out += [Value(f"db_snapshots.cost.heldout.{k}", **q._asdict()) for k, q in none.quoted().items()]
    out.append(Value("memory_dump.fit.ssd.after.rms_pct", 1.0, "%"))
    return {v.key: v for v in out}


def test_rows_are_found_from_the_keys():
    rows = paper_heldout.rows(values())
    assert [(r.study, r.model, r.subset) for r in rows] == [("db_snapshots", "cost", ""),
                                                            ("memory_dump", "after", "ssd")]
    assert rows[1].text("verdict") == "predicts"


def test_the_table_prints_error_bound_and_verdict():
    tex = paper_heldout.heldout_tex(values())
    assert "dump time: wait after the write & ssd &" in tex and "predicts" in tex and "descriptive only" in tex
    assert "\\,\\% (p1)" in tex and "$\\pm$10\\,\\%" in tex and "--" in tex
    counts = {v.key: v.value for v in paper_heldout.heldout_values(values())}
    assert counts == {"paper.heldout.tests": 2.0, "paper.heldout.predicts": 1.0}
