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


def test_a_set_of_many_parts_is_cached_under_a_short_name_of_its_own(tmp_path, monkeypatch):
    """A set's name (its parts' ids joined) of nine parts is longer than a file name may be: its cache file is
    named by its first part, its count and a hash of the whole name, one per set."""
    from snaptax.record import PartSet

    monkeypatch.setenv("SNAPTAX_DERIVED_DIR", str(tmp_path / "derived"))
    runs = []
    for k in range(9):
        run = tmp_path / "chain_length" / f"2026010{k + 1}T000000Z-full-in-memory-metadata.r{k % 3}"
        run.mkdir(parents=True)
        (run / MANIFEST).write_text("{}")
        runs.append(run)
    again = runs[-1].with_name(runs[-1].name.replace("20260109", "20260110"))    # its last part measured again
    again.mkdir()
    (again / MANIFEST).write_text("{}")
    nine, other = PartSet(tuple(runs)), PartSet((*runs[:-1], again))
    path = derived.cache_path(nine)
    assert len(nine.name) > 255 and len(path.name) < 100 and path.name.startswith(f"{runs[0].name}+8-")
    # the other set's stem (the name without the code's hash) is its own: storing one never drops the other's
    assert derived.cache_path(other).name.rsplit("-", 1)[0] != path.name.rsplit("-", 1)[0]
    path.parent.mkdir(parents=True)
    path.write_text("{}")          # a file system takes the name
