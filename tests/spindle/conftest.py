import shutil

import pytest


@pytest.fixture(scope="session")
def spindle_core(tmp_path_factory):
    """The C model core compiled into a temporary directory (tests write nothing into the checkout's build/)."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc (make setup installs it)")
    from snaptax.spindle.build import build_core
    return build_core(library=tmp_path_factory.mktemp("core") / "libspindle-core.so", force=True)
