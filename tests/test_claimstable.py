"""claimstable: the claims table in four forms, Holm-adjusted verdicts, a tally per seed, late and model rows marked."""
import csv
import io
import json
import math

import pytest

from snaptax import claims, claimstable
from snaptax.errors import ConfigError
from snaptax.values import DerivedValues, Value
from tests.synthetic import judged

LONG = ("loss of randrw IOPS with one snapshot on the on-disk metadata configuration, the stand-in of VMFS's redo log, "
        "averaged over the job's | separated phases")
LOSS = claims.Claim("chain_length.loss", "setty2021", "Table 1", LONG, 65.0, "%", 0.0, 15.0, "b", "chain_length.loss",
                    "qcow2", label="C001-1")
EDGE = claims.Claim("chain_length.edge", "setty2021", "Table 2", "loss with 2 snapshots", 65.0, "%", 0.0, 15.0, "b",
                    "chain_length.edge", "qcow2", label="C001-2")
NEAR = claims.Claim("chain_length.near", "setty2021", "Table 2", "loss with 3 snapshots", 65.0, "%", 0.0, 15.0, "b",
                    "chain_length.near", "qcow2", label="C001-3")
MODEL = claims.Claim("tiering.C002-1a", "kanap", "its two IOPS tables", "IOPS with a snapshot, % of the initial", 12.0,
                     "%", 100.0, 5.0, "b", "tiering.iops", "pool", basis="model")
DIRECTION = claims.Claim("db_snapshots.C004-3", "kehayias", "Figure 1", "what the second snapshot adds", 50.0, "%",
                         100.0, 10.0, "b", "db_snapshots.second", "ssd", published_text="lower (no number)",
                         direction=-1)


def derived(study, outcomes, flagged=0.0, emulated=0.0):
    d = DerivedValues(study, "r", "local", "quick")
    d.add([Value(f"{study}.run.flagged", flagged, "measurements"),
           Value(f"{study}.run.emulated_measurements", emulated, "measurements")])
    d.claims = [o.to_json() for o in outcomes]
    return d


def edge_value(key, p):
    """A value near the band's upper edge (65 ± 15) whose agreement p is `p`: between α/2 and α it agrees alone,
    but not after Holm's adjustment with another such claim of its seed."""
    from scipy import stats as sps
    n, se = 4, 1.0
    value = 80.0 - float(sps.t.ppf(1 - p, n - 1)) * se
    return Value(key, value, "%", value - 3.18 * se, value + 3.18 * se, n, 1, None, "t", se, n - 1, "linear", True)


@pytest.fixture
def rows():
    return claimstable.rows_of([
        ("20260101T000000Z-quick", derived("chain_length", [
            claims.Outcome(LOSS, judged("chain_length.loss", 60, 58, 62, 4)),
            claims.Outcome(EDGE, edge_value("chain_length.edge", 0.035)),
            claims.Outcome(NEAR, edge_value("chain_length.near", 0.04))])),
        ("20260102T000000Z-quick", derived("tiering", [claims.Outcome(MODEL, judged("tiering.iops", 90, 85, 95, 2))],
                                           flagged=36, emulated=36)),
        ("20260103T000000Z-quick", derived("db_snapshots", [
            claims.Outcome(DIRECTION, Value("db_snapshots.second", math.nan, "%"))])),
    ])


def test_rows_carry_the_family_verdicts_and_their_run(rows):
    outcomes = [claims.from_json(o.outcome.to_json()) for o in rows]
    assert [r.outcome.verdict for r in rows] == [o.verdict for o in claims.adjusted(outcomes)]
    assert claims.verdict(EDGE, rows[1].outcome.ours) == "agrees"            # alone it agrees ...
    assert rows[1].outcome.verdict == "inconclusive"                          # ... nor with C001-3 after Holm
    assert [(r.study, r.run, r.flagged, r.emulated) for r in rows][3] == ("tiering", "20260102T000000Z-quick", 36, 36)
    assert [r.marks for r in rows] == [[], [], [], ["late", "model"], []]


def test_text_fits_the_terminal_wraps_and_ends_with_the_tally(rows):
    for width in (80, claimstable.WIDTH):
        text = claimstable.render(rows, "text", "local", "quick", width)
        lines = text.splitlines()
        assert max(len(line) for line in lines) <= width, width
        body = " ".join(text.split())
        for word in LONG.split():                                # every word of the wrapped cell is there
            assert word in body
    tail = text[text.index("tally per seed"):].splitlines()
    assert tail[1].split() == ["seed", "agrees", "differs", "inconclusive", "not", "judged", "calibration", "rows"]
    assert tail[2].split() == ["001", "(setty2021)", "1", "0", "2", "0", "0", "3"]
    assert tail[5].split() == ["all", "seeds", "1", "0", "2", "2", "0", "5"]
    assert "tiering: run 20260102T000000Z-quick: LATE, 36 of 36 emulated measurements flagged" in text
    assert "chain_length: run 20260101T000000Z-quick" in text
    lines = text.splitlines()
    model_row = next(i for i, line in enumerate(lines) if line.startswith("C002-1a"))
    assert [lines[model_row + k].split()[0] for k in (1, 2)] == ["late", "model"]       # marks below the label
    assert "(model)" in lines[model_row + 2]                                            # and after our value
    assert "late: its run has emulated measurements flagged" in text and "model: ours is a model's" in text


def test_column_widths_narrow_the_widest_and_keep_every_word():
    table = [["a", "b"], ["x" * 4, "word " * 30]]
    widths = claimstable.column_widths(table, 40)
    assert widths[0] == 4 and sum(widths) + claimstable.GAP == 40
    lines = claimstable.table_lines(table[1], widths)
    assert all(len(line) <= 40 for line in lines)
    assert " ".join(lines).split() == ["xxxx"] + ["word"] * 30
    # a word longer than any room is broken, never let through
    assert all(len(line) <= 20 for line in claimstable.table_lines(["y" * 50, "z"], claimstable.column_widths(
        [["y" * 50, "z"]], 20)))


def test_json_has_every_row_with_ours_verdict_ratio_and_run(rows):
    doc = json.loads(claimstable.render(rows, "json", "local", "quick"))
    assert doc["rig"] == "local" and doc["profile"] == "quick" and doc["verdict_rule"] == claims.VERDICT_RULE
    first, _, _, model, direction = doc["rows"]
    assert {k: first[k] for k in ("claim", "seed", "published", "tolerance", "verdict", "run")} == {
        "claim": "chain_length.loss", "seed": "001", "published": 65.0, "tolerance": 15.0, "verdict": "agrees",
        "run": "20260101T000000Z-quick"}
    assert first["ours"] == {"value": 60.0, "low": 58.0, "high": 62.0, "n": 4, "independent": True,
                             "basis": "measured"}
    assert first["effect_ratio"]["value"] == pytest.approx(60 / 65)
    assert model["late"] and model["model"] and model["flagged"] == 36 and model["verdict"] == "not judged"
    assert model["not_judged_because"] == "n < 3"
    # a direction without a number: no published value, no ratio; our missing value is null, never NaN
    assert direction["published"] is None and direction["direction"] == -1 and direction["effect_ratio"] is None
    assert direction["ours"]["value"] is None
    assert doc["tally"]["001"] == {"agrees": 1, "differs": 0, "inconclusive": 2, "not judged": 0, "calibration": 0}
    assert doc["tally"]["all"]["not judged"] == 2 and set(doc["tally"]) == {"001", "002", "004", "all"}


def test_csv_is_one_line_per_row_in_fixed_columns(rows):
    read = list(csv.DictReader(io.StringIO(claimstable.render(rows, "csv", "local", "quick"))))
    assert len(read) == len(rows) and list(read[0]) == list(claimstable.CSV_COLUMNS)
    assert read[0]["statement"] == LONG and read[0]["ours_n"] == "4" and read[0]["effect_ratio_value"]
    assert read[3]["marks"] == "late; model" and read[4]["effect_ratio_value"] == "" and read[4]["published"] == ""


def test_markdown_is_a_table_with_escaped_cells_and_the_tally(rows):
    md = claimstable.render(rows, "markdown", "local", "quick")
    table = [line for line in md.splitlines() if line.startswith("|")]
    cells = {line.replace("\\|", "").count("|") for line in table[:len(rows) + 2]}
    assert cells == {len(claimstable.MARKDOWN_HEADER) + 1}          # the statement's '|' is escaped
    assert "20260102T000000Z-quick (36 of 36 flagged)" in md and "| all seeds | 1 | 0 | 2 | 2 | 0 | 5 |" in md


@pytest.mark.parametrize("fmt,width,field", [("xml", 120, "FORMAT"), ("text", 20, "WIDTH")])
def test_bad_format_or_width_names_the_field(rows, fmt, width, field):
    with pytest.raises(ConfigError) as err:
        claimstable.render(rows, fmt, "local", "quick", width)
    assert err.value.field == field and "\n" not in str(err.value)
