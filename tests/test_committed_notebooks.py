"""The committed notebooks (notebooks/*.ipynb) obey their parameters cell: no papermill injected-parameters cell after
it, every parameter typed and described so that `papermill --help-notebook` documents it, and no later cell sets a
parameter again. A reader who edits the cell in `make lab` and runs all gets what it says."""
import ast

import nbformat
import papermill
import pytest

from snaptax import notebooks, paths, profiles, studies
from snaptax.host import rig as rigmod

NOTEBOOKS = sorted((paths.REPO_ROOT / "notebooks").glob("*.ipynb"))
PARAMETERS = {"rig": ("str", "local"), "profile": ("str", "quick"), "run_dir": ("Optional[str]", None),
              "measure": ("bool", False)}


@pytest.mark.committed
def test_every_study_has_its_committed_notebook():
    assert [p.name for p in NOTEBOOKS] == sorted(s.notebook for s in studies.REGISTRY)


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


@pytest.mark.committed
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_injected_parameters_and_one_parameters_cell(path):
    nb = nbformat.read(path, as_version=4)
    assert [c for c in nb.cells if notebooks.INJECTED_TAG in _tags(c)] == [], \
        f"{path.name}: strip papermill's cell (make notebooks-commit does)"
    assert sum(notebooks.PARAMETERS_TAG in _tags(c) for c in nb.cells) == 1


@pytest.mark.committed
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_papermill_documents_every_parameter_with_its_type(path):
    found = papermill.inspect_notebook(str(path))
    assert {name: (p["inferred_type_name"], notebooks.defaults(path)[name]) for name, p in found.items()} == PARAMETERS
    undocumented = [name for name, p in found.items() if len(p["help"]) < 20]
    assert not undocumented, f"{path.name}: parameters without a description: {undocumented}"
    helps = {name: p["help"] for name, p in found.items()}
    assert all(r in helps["rig"] for r in rigmod.names()) and all(p in helps["profile"] for p in profiles.PROFILES)


@pytest.mark.committed
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_cell_after_the_parameters_sets_one_again(path):
    """What the injected cell did: a later assignment would silently override the reader's edit."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    first = next(i for i, c in enumerate(code) if notebooks.PARAMETERS_TAG in _tags(c))
    for cell in code[first + 1:]:
        tree = ast.parse("\n".join(line for line in cell.source.splitlines() if not line.startswith(("%", "!"))))
        targets = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        again = targets & set(PARAMETERS)
        assert not again, f"{path.name}: a cell after the parameters cell sets {again}"
    opened = [c.source for c in code if ".open(rig, profile, run_dir, measure)" in c.source]
    assert len(opened) == 1, f"{path.name}: the run is opened with the four parameters exactly once"


# Loaded by the kernel at start (IPython startup file): the study's measuring module is replaced by one that records
# what it was asked and stops the notebook there, so that nothing is measured; Study.run (up to measure.setup) and
# everything above it
# (the notebook's cells, Study.open) run as they are.
FAKE_MEASURE = '''
import json, os, types
from snaptax import studies

_module = studies.Study.module


def _fake(self, part):
    if part != "measure":
        return _module(self, part)

    def setup(rig, profile, device=None, part=None):
        with open(os.environ["SNAPTAX_TEST_ASKED"], "w") as f:
            json.dump({"study": self.id, "rig": rig.name, "profile": profile.name}, f)
        raise RuntimeError(f"fake measurement of {self.id} asked: nothing measured")
    return types.SimpleNamespace(setup=setup)


studies.Study.module = _fake
'''


def test_editing_the_parameters_cell_and_running_all_measures_as_it_says(tmp_path, monkeypatch):
    """As in `make lab`: the committed notebook with `profile` and `measure = True` edited in its parameters cell, every
    cell run in order in a real kernel, reaches the study's measurement with those values (as root; without root, the
    one line saying that measuring needs root)."""
    import json
    import os

    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-fake-measure.py").write_text(FAKE_MEASURE)
    asked = tmp_path / "asked.json"
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("SNAPTAX_TEST_ASKED", str(asked))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(paths.SRC_DIR), os.environ.get("PYTHONPATH")])))
    path = paths.REPO_ROOT / "notebooks" / studies.get("chain_length").notebook
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if notebooks.PARAMETERS_TAG in _tags(c))
    edited = cell.source.replace('profile: str = "quick"', 'profile: str = "smoke"').replace(
        "measure: bool = False", "measure: bool = True")
    assert edited.count("smoke") and edited.count("True") and edited != cell.source
    cell.source = edited
    client = NotebookClient(nb, kernel_name=notebooks.KERNEL, timeout=120,
                            resources={"metadata": {"path": str(path.parent)}})
    with pytest.raises(CellExecutionError) as err:
        client.execute()
    if os.geteuid() == 0:
        assert "fake measurement of chain_length asked" in str(err.value)
        assert json.loads(asked.read_text()) == {"study": "chain_length", "rig": "local", "profile": "smoke"}
    else:
        assert "measuring needs root" in str(err.value) and not asked.exists()
    failed = [c for c in nb.cells if c.cell_type == "code" and any(o.output_type == "error" for o in c.outputs)]
    assert [".open(rig, profile, run_dir, measure)" in c.source for c in failed] == [True]


def test_a_kernel_papermill_starts_warns_of_no_tcp(tmp_path, monkeypatch, capfd):
    """ipykernel warns "Kernel is running over TCP without encryption" unless its transport is not TCP: the
    notebooks' kernels listen on Unix sockets in a private directory, and leave none behind."""
    import tempfile
    from pathlib import Path

    import nbformat.v4 as v4

    before = list(Path(tempfile.gettempdir()).glob("snaptax-kernel-*"))
    runtime = tmp_path / "runtime"
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": notebooks.KERNEL, "language": "python", "display_name": "snaptax"}
    nb.cells = [v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}), v4.new_code_cell("print(x * 2)")]
    source = tmp_path / "nb" / "t.ipynb"
    source.parent.mkdir()
    source.write_text(nbformat.writes(nb))
    out = notebooks.execute(source, tmp_path / "out" / "t.ipynb", {"x": 21})
    assert nbformat.read(out, as_version=4).cells[-1].outputs[0].text == "42\n"
    captured = capfd.readouterr()
    assert "without encryption" not in captured.err + captured.out
    assert sorted(p.name for p in source.parent.iterdir()) == ["t.ipynb"]
    assert not runtime.exists() or list(runtime.iterdir()) == []
    assert list(Path(tempfile.gettempdir()).glob("snaptax-kernel-*")) == before      # its sockets' directory too
