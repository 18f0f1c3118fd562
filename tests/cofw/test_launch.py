"""The launcher's pieces: configuration, the plugin's build (setup) with its refusals, and the snapshots'
allocated space (which the plugin reports in its counters)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from snaptax.cofw.build import build_plugin, needs_build
from snaptax.cofw.launch import PLUGIN, CofwEngineConfig
from snaptax.errors import ConfigError, EngineError, MissingTool
from snaptax.paths import COFW_PLUGIN, COFW_SOURCE


def test_config_validation():
    assert CofwEngineConfig().core().page_size == 8192
    with pytest.raises(ConfigError, match="threads"):
        CofwEngineConfig(threads=0)
    with pytest.raises(ConfigError, match="page_size"):
        CofwEngineConfig(page_size=2048)                    # direct=True needs 4 KiB multiples
    assert PLUGIN == COFW_PLUGIN and PLUGIN.suffix == ".so"


def test_a_missing_compiler_is_one_line_naming_the_package(tmp_path, monkeypatch):
    with pytest.raises(MissingTool) as exc:
        build_plugin(cc="no-such-cc-12", plugin=tmp_path / "p.so", force=True)
    assert "'gcc'" in str(exc.value) and "\n" not in str(exc.value)
    monkeypatch.setenv("CC", "/nonexistent/gcc")             # make setup honours $CC
    with pytest.raises(MissingTool, match="package 'gcc'"):
        build_plugin(plugin=tmp_path / "p.so", force=True)


@pytest.mark.parametrize("header,package", [("nbdkit-plugin.h", "nbdkit-plugin-dev"), ("libnbd.h", "libnbd-dev")])
def test_a_missing_header_package_is_one_line_naming_it(tmp_path, header, package):
    """A compiler wrapper that cannot find one header, as on a machine without the -dev package."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc")
    wrapper = tmp_path / "cc"
    wrapper.write_text(f"#!/bin/sh\nif grep -q '{header}' 2>/dev/null; then echo 'fatal error: {header}' >&2; "
                       f"exit 1; fi\nexec {gcc} \"$@\"\n")
    wrapper.chmod(0o755)
    with pytest.raises(MissingTool) as exc:
        build_plugin(cc=str(wrapper), plugin=tmp_path / "p.so", force=True)
    assert f"'{package}'" in str(exc.value) and "\n" not in str(exc.value)
    assert not (tmp_path / "p.so").exists()


def test_a_failed_compile_is_one_line(tmp_path):
    """A compiler that passes the header probes (-E) and then fails with output naming no error."""
    wrapper = tmp_path / "cc"
    wrapper.write_text("#!/bin/sh\n[ \"$1\" = -E ] && exit 0\necho 'cc1: out of memory' >&2; echo 'more' >&2; exit 1\n")
    wrapper.chmod(0o755)
    with pytest.raises(EngineError) as exc:
        build_plugin(cc=str(wrapper), plugin=tmp_path / "p.so", force=True)
    assert str(exc.value) == "building p.so from cofw.c failed: cc1: out of memory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cc"]         # neither the plugin nor its temporary


@pytest.mark.integration
def test_build_is_skipped_when_current_and_redone_when_the_source_is_newer(tmp_path):
    out = build_plugin(plugin=tmp_path / "p.so")
    assert out.exists() and not needs_build(plugin=out)
    before = out.stat().st_mtime_ns
    assert build_plugin(plugin=out).stat().st_mtime_ns == before       # current: not rebuilt
    src = tmp_path / "cofw.c"
    shutil.copy(COFW_SOURCE, src)
    os.utime(out, (1, 1))                                              # the plugin older than its source
    assert needs_build(source=src, plugin=out)
    assert build_plugin(source=src, plugin=out).stat().st_mtime_ns != 1
    assert [p.name for p in Path(tmp_path).iterdir() if p.suffix == ".tmp"] == []


@pytest.mark.integration
def test_allocated_bytes_counts_the_snapshot_files_blocks(disk_dir):
    from tests.cofw.volume import Volume
    (disk_dir / "src.img").write_bytes(os.urandom(64 << 20))
    with Volume(disk_dir / "src.img", page_size=8192, durability="none") as vol:
        assert vol.counters()["snapshot_allocated_bytes"] == 0     # no snapshots
        vol.create_snapshot("s1")                    # a sparse 64 MiB file with one 8 KiB page copied
        vol.write(b"y" * 8192, 1 << 20)
        vol.flush()                                  # durability=none: a flush syncs the copies first
        (disk_dir / "s1.snap.unsafe").write_bytes(b"x" * 100000)   # not a snapshot file
        got = vol.counters()["snapshot_allocated_bytes"]
        assert got == os.stat(disk_dir / "s1.snap").st_blocks * 512
        assert 8192 <= got < 1 << 20
