"""environment.yml (conda) and requirements.txt (pip) pin the same versions."""
import re

import yaml

from snaptax import paths

DESIGN_CARD = {"jupyterlab", "papermill", "numpy", "scipy", "altair", "nbval"}


def pip_pins():
    pins = {}
    for line in (paths.REPO_ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"requirements.txt: {line!r} is not pinned with =="
            pins[re.sub(r"[-_.]+", "-", name.lower())] = version
    return pins


def conda_pins():
    env = yaml.safe_load((paths.REPO_ROOT / "environment.yml").read_text())
    pins = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for line in dep.get("pip", []):
                name, _, version = line.partition("==")
                if version:
                    pins[re.sub(r"[-_.]+", "-", name.lower())] = version
            continue
        name, _, version = dep.partition("=")
        pins[re.sub(r"[-_.]+", "-", name.lower())] = version.lstrip("=")
    return pins


def test_conda_and_pip_pins_agree():
    pip, conda = pip_pins(), conda_pins()
    conda.pop("python", None)
    conda.pop("pip", None)
    disagree = {k: (v, pip.get(k)) for k, v in conda.items() if pip.get(k) != v}
    assert not disagree, f"environment.yml vs requirements.txt: {disagree}"
    assert DESIGN_CARD <= set(conda), "environment.yml lacks packages the design card fixes"


def test_every_direct_dependency_is_in_both():
    assert DESIGN_CARD | {"vl-convert-python", "pytest", "pyyaml", "pandas"} <= set(pip_pins())


def test_declared_dependencies_are_pinned_within_their_ranges():
    """pyproject.toml's ranges (what snaptax needs) admit requirements.txt's exact pins (what it is tested with)."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((paths.REPO_ROOT / "pyproject.toml").read_text())["project"]
    pins = pip_pins()
    declared = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"]]
    outside = {}
    for req in declared:
        name = re.sub(r"[-_.]+", "-", req.name.lower())
        if name not in pins or not req.specifier.contains(pins[name]):
            outside[req.name] = (str(req.specifier), pins.get(name))
    assert not outside, f"pyproject.toml range vs requirements.txt pin: {outside}"
    assert {"ruff", "mypy"} <= set(pins), "the static checks must be pinned"


# Reading (make setup-read: make lab, claims, pdf, ...) installs tools/apt-packages-read.txt, a subset of the whole
# list, and none of the measuring tools: no fio, QEMU, nbdkit, libnbd, LVM or compiler.
MEASURING_TOOLS = {"fio", "qemu-utils", "qemu-system-common", "qemu-block-extra", "qemu-system-x86", "nbdkit",
                   "nbdkit-plugin-python", "nbdkit-plugin-dev", "libnbd-bin", "libnbd-dev", "python3-libnbd", "lvm2",
                   "thin-provisioning-tools", "gcc"}
READING_TARGETS = ("lab", "claims", "site", "pdf", "render", "compare", "nbval", "notebooks-commit")


def apt_packages(name):
    lines = (paths.REPO_ROOT / "tools" / name).read_text().splitlines()
    return [p for p in (line.split("#")[0].strip() for line in lines) if p]


def test_the_reading_packages_are_a_subset_without_measuring_tools():
    everything, reading = apt_packages("apt-packages.txt"), apt_packages("apt-packages-read.txt")
    assert len(set(reading)) == len(reading) and len(set(everything)) == len(everything), "a package listed twice"
    assert set(reading) <= set(everything), f"only in the reading list: {sorted(set(reading) - set(everything))}"
    assert MEASURING_TOOLS <= set(everything), f"not in the whole list: {sorted(MEASURING_TOOLS - set(everything))}"
    measuring = sorted(p for p in reading if p in MEASURING_TOOLS or p.startswith(("fio", "qemu", "nbdkit", "libnbd")))
    assert not measuring, f"the reading list installs measuring tools: {measuring}"
    assert {"python3-venv", "latexmk"} <= set(reading), "reading needs Python's venv and TeX"


def test_reading_targets_need_the_reading_setup_only():
    from .makefile import needs, rules

    setup = (paths.REPO_ROOT / "tools" / "setup.sh").read_text()
    assert "--read) mode=read; packages=tools/apt-packages-read.txt" in setup
    assert rules()["setup-read"] == [] and rules()["setup"] == []
    for target in READING_TARGETS:
        assert "setup-read" in needs(target) and "setup" not in needs(target), f"make {target}: {sorted(needs(target))}"
    for target in ("paper", "test", "unit", "bench", "notebooks"):
        assert "setup" in needs(target), f"make {target} measures: it needs the whole setup"
