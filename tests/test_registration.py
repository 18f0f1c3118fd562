"""The pre-registration: append-only files whose hashes are recorded, every tolerance from the one rule, every
stand-in and calibrating statement accounted for."""
import math

import pytest

from snaptax import registration as reg, standins
from snaptax.errors import ConfigError


def test_every_registration_is_unchanged_since_its_hash_was_recorded():
    sums = dict(line.split()[::-1] for line in (reg.directory() / "SHA256SUMS").read_text().splitlines() if line)
    files = reg.files()
    assert files and {p.name for p in files} == set(sums)
    for p in files:
        assert reg.sha256(p) == sums[p.name], f"{p.name} was edited after registration: register anew instead"


def test_tolerances_follow_the_one_rule_and_roles_are_complete():
    r = reg.newest()
    assert r is not None and r.date
    for c in r.claims.values():
        assert c.tolerance == max(c.precision, c.smallest_effect)
        if c.role == "unjudged":
            assert c.reason
        else:
            assert (c.direction != 0) == math.isnan(c.published), c.id
            assert c.stand_in and standins.get(c.stand_in), c.id
    kinds = {c.kind for c in r.claims.values()}
    assert kinds <= set(reg.SMALLEST_EFFECT)


def test_each_inferred_stand_in_names_a_registered_calibrating_statement():
    r = reg.newest()
    for s in standins.STAND_INS:
        if s.source == "inferred":
            c = r.get(s.calibrating)
            assert c.role == "calibration" and c.stand_in == s.id, s.id
        else:
            assert not s.calibrating
    calibrating = {c.id for c in r.claims.values() if c.role == "calibration"}
    named = {s.calibrating for s in standins.STAND_INS}
    # every calibrating statement belongs to an inferred stand-in (a second statement of the same seed sentence, as
    # C000-2 is of C000-1b, says so by naming the same stand-in)
    assert all(r.claims[i].stand_in in {s.id for s in standins.STAND_INS if s.source == "inferred"}
               for i in calibrating) and named - {""} <= calibrating


def test_a_malformed_registration_is_one_line_naming_the_field(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("claims:\n- {id: a.b, label: C001-1, cite: c, where: w, statement: s, unit: '%', kind: rate_pct,\n"
                 "   no_effect: 0, published: 5, precision: 0, role: maybe}\n")
    with pytest.raises(ConfigError, match=r"claims\[0\]\.role"):
        reg.parse(p)
    p.write_text("claims:\n- {id: a.b, label: C001-1, cite: c, where: w, statement: s, unit: '%', kind: rate_pct,\n"
                 "   no_effect: 0, precision: 0, role: judged}\n")
    with pytest.raises(ConfigError, match="a number, or a direction"):
        reg.parse(p)


def test_a_run_s_recorded_registration_is_read_from_its_manifest(tmp_path):
    (tmp_path / "manifest.json").write_text('{"registration": {"file": "x.yaml", "sha256": "ab"}, "runs": 3}')
    assert reg.recorded_in(tmp_path) == {"file": "x.yaml", "sha256": "ab"}
    (tmp_path / "manifest.json").write_text('{"runs": 3}')        # a record format before the first registration
    assert reg.recorded_in(tmp_path) is None
    assert reg.recorded_in(tmp_path / "missing") is None


def test_a_changed_registration_file_is_parsed_again(tmp_path, monkeypatch):
    monkeypatch.setattr(reg, "directory", lambda: tmp_path)
    p = tmp_path / "20990101-1.yaml"
    row = ("claims:\n- {id: a.b, label: C001-1, cite: c, where: w, statement: s, unit: '%', kind: rate_pct,\n"
           "   no_effect: 0, published: PUB, precision: 0, role: judged}\n")
    p.write_text(row.replace("PUB", "5"))
    first = reg.newest()
    assert first is not None and reg.by_hash(first.sha256) is first        # parsed once, found again by its hash
    p.write_text(row.replace("PUB", "50"))
    second = reg.newest()
    assert second is not None and second.claims["a.b"].published == 50.0 and reg.by_hash(first.sha256) is None
