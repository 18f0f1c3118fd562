"""Derived values: computed from a run without writing into it, cached by the run and the code, never stale."""
import json

from snaptax import derived
from snaptax.record import MANIFEST


def _tree(path):
    return sorted((p.relative_to(path), p.stat().st_mtime_ns) for p in path.rglob("*"))


def test_results_of_a_run_leave_the_run_untouched_and_come_back_from_the_cache(tmp_path, monkeypatch):
    from tests.studies.chain_length.test_analyse import build_run

    monkeypatch.setenv("SNAPTAX_DERIVED_DIR", str(tmp_path / "derived"))
    run = build_run(tmp_path / "data")
    before = _tree(run)
    first = derived.values_of(run)
    assert _tree(run) == before                               # nothing written into the raw run
    cached = derived.cache_path(run)
    assert cached.is_file() and cached.is_relative_to(tmp_path / "derived")
    assert derived.values_of(run).to_json() == first.to_json()
    # a cached file of another version is analysed again, not served
    cached.write_text(json.dumps({"format": "snaptax-derived-values", "format_version": 0}))
    assert derived.values_of(run).to_json() == first.to_json()


def test_the_cache_key_follows_the_manifest_and_the_code(tmp_path, monkeypatch):
    monkeypatch.setenv("SNAPTAX_DERIVED_DIR", str(tmp_path / "derived"))
    run = tmp_path / "s" / "r1"
    run.mkdir(parents=True)
    (run / MANIFEST).write_text("{}")
    key = derived.cache_path(run)
    (run / MANIFEST).write_text('{"x": 1}')
    assert derived.cache_path(run) != key
    monkeypatch.setattr(derived, "code_fingerprint", lambda: "other code")
    assert derived.cache_path(run).name != key.name
