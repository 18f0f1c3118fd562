"""Analyses of the default synthetic runs, each made once per session (once per pytest-xdist worker in make test): the
memory-dump analysis is the slowest in the suite (its profile-likelihood intervals), and several tests only read the
same one. No test changes them."""
import pytest

from snaptax.studies.memory_dump import analyse as an
from tests.studies.memory_dump.test_analyse import make_guest_run, make_run


@pytest.fixture(scope="session")
def quick_analysis(tmp_path_factory):
    """test_analyse.make_run's default quick run, analysed."""
    return an.analyse(make_run(tmp_path_factory.mktemp("quick")))


@pytest.fixture(scope="session")
def smoke_analysis(tmp_path_factory):
    """make_run's smoke run (no guest phase), analysed."""
    return an.analyse(make_run(tmp_path_factory.mktemp("smoke"), "smoke"))


@pytest.fixture(scope="session")
def smoke_guest_analysis(tmp_path_factory):
    """make_guest_run's default smoke run with its guest phase, analysed."""
    return an.analyse(make_guest_run(tmp_path_factory.mktemp("guest")))
