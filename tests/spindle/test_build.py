"""Building the emulator's C objects: refusals in one line naming the Debian package, rebuilds only when stale."""
import os
import shutil

import pytest

from snaptax.errors import MissingTool
from snaptax.spindle import build


def test_a_missing_compiler_is_one_line_naming_the_package(tmp_path):
    targets = ((build.build_plugin, {"plugin": tmp_path / "p.so"}), (build.build_core, {"library": tmp_path / "c.so"}))
    for fn, out in targets:
        with pytest.raises(MissingTool) as exc:
            fn(cc="no-such-cc-12", force=True, **out)
        assert "'gcc'" in str(exc.value) and "\n" not in str(exc.value)
    assert list(tmp_path.iterdir()) == []


def test_a_missing_nbdkit_header_names_nbdkit_plugin_dev(tmp_path):
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc")
    wrapper = tmp_path / "cc"
    wrapper.write_text(f"#!/bin/sh\nif grep -q 'nbdkit-plugin.h' 2>/dev/null; then exit 1; fi\nexec {gcc} \"$@\"\n")
    wrapper.chmod(0o755)
    with pytest.raises(MissingTool, match="'nbdkit-plugin-dev'"):
        build.build_plugin(cc=str(wrapper), plugin=tmp_path / "p.so", force=True)
    assert not (tmp_path / "p.so").exists()


def test_the_core_is_rebuilt_only_when_stale(spindle_core):
    before = spindle_core.stat().st_mtime_ns
    assert build.build_core(library=spindle_core) == spindle_core            # current: not rebuilt
    assert spindle_core.stat().st_mtime_ns == before
    os.utime(spindle_core, (1, 1))                                            # older than its sources
    build.build_core(library=spindle_core)
    assert spindle_core.stat().st_mtime_ns != 1
