"""notebooks: finding and signalling the kernel (a fake /proc), echoing its progress lines, and execute() with a fake
papermill: the executed copy, the one-line failure, Ctrl-C passed on to the kernel, nothing left behind."""
import signal
import sys
import threading
import types
from pathlib import Path

import pytest

from snaptax import notebooks
from snaptax.notebooks import NotebookFailed
from snaptax.progress import PROGRESS_FILE_ENV

ME = 4242


def _proc_entry(proc: Path, pid: str, stat: str | None, cmdline: bytes = b"") -> None:
    d = proc / pid
    d.mkdir()
    if stat is not None:
        (d / "stat").write_text(stat)
    (d / "cmdline").write_bytes(cmdline)


def test_kernel_children_are_our_ipykernel_children(tmp_path, monkeypatch):
    monkeypatch.setattr(notebooks.os, "getpid", lambda: ME)
    kernel = b"/work/.venv/bin/python\0-m\0ipykernel_launcher\0-f\0k.json\0"
    _proc_entry(tmp_path, "100", f"100 (python3) S {ME} 100 100 0", kernel)
    _proc_entry(tmp_path, "101", f"101 (a (tricky) name) S {ME} 101 101 0", kernel)   # comm with ') '
    _proc_entry(tmp_path, "102", f"102 (fio) S {ME} 102 102 0", b"fio\0job.fio\0")      # our child, not a kernel
    _proc_entry(tmp_path, "103", "103 (python3) S 1 103 103 0", kernel)                # a kernel, not ours
    _proc_entry(tmp_path, "104", None, kernel)                                         # gone while we looked
    _proc_entry(tmp_path, "105", "105 (python3)", kernel)                              # truncated stat
    (tmp_path / "self").mkdir()
    assert sorted(notebooks._kernel_children(tmp_path)) == [100, 101]


def test_signal_kernels_signals_each_and_ignores_one_already_gone(monkeypatch):
    monkeypatch.setattr(notebooks, "_kernel_children", lambda: [100, 101, 102])
    sent = []

    def kill(pid, sig):
        sent.append((pid, sig))
        if pid == 101:
            raise ProcessLookupError(pid)
    monkeypatch.setattr(notebooks.os, "kill", kill)
    notebooks._signal_kernels(signal.SIGINT)
    assert sent == [(100, signal.SIGINT), (101, signal.SIGINT), (102, signal.SIGINT)]


def test_echo_new_lines_prints_only_complete_lines(tmp_path, capsys):
    log = tmp_path / "progress"
    log.write_bytes(b"step 1 done\nstep 2 hal")
    shown = notebooks._echo_new_lines(log, 0)
    assert shown == len(b"step 1 done\n") and capsys.readouterr().err == "step 1 done\n"
    assert notebooks._echo_new_lines(log, shown) == shown and capsys.readouterr().err == ""     # nothing new
    with open(log, "ab") as f:
        f.write(b"f\xff\nstep 3")
    shown = notebooks._echo_new_lines(log, shown)
    assert capsys.readouterr().err == "step 2 half\N{REPLACEMENT CHARACTER}\n"              # bad bytes replaced
    assert shown == len(b"step 1 done\nstep 2 half\xff\n")


def test_echo_new_lines_of_a_missing_file_consumes_nothing(tmp_path, capsys):
    assert notebooks._echo_new_lines(tmp_path / "gone", 17) == 17 and capsys.readouterr().err == ""


@pytest.fixture
def fake_papermill(monkeypatch):
    """A papermill whose execute_notebook runs `behaviour(notebook, output, progress_path, **kwargs)` (its
    inspect_notebook, which reads a parameters cell, is papermill's)."""
    import papermill

    module = types.SimpleNamespace(calls=[], behaviour=None, inspect_notebook=papermill.inspect_notebook)

    def execute_notebook(notebook, output, **kwargs):
        module.calls.append((notebook, output, kwargs))
        module.behaviour(Path(notebook), Path(output), Path(notebooks.os.environ[PROGRESS_FILE_ENV]), **kwargs)
    module.execute_notebook = execute_notebook
    monkeypatch.setitem(sys.modules, "papermill", module)
    return module


@pytest.fixture
def notebook(tmp_path):
    nb = tmp_path / "nb" / "01_study.ipynb"
    nb.parent.mkdir()
    nb.write_text("{}")
    return nb


def _progress_files(d: Path) -> list[Path]:
    return list(d.glob(".*.progress"))


@pytest.mark.parametrize("previous", [None, "/somewhere/else"])
def test_execute_writes_the_copy_echoes_progress_and_restores_the_environment(
        tmp_path, monkeypatch, capsys, fake_papermill, notebook, previous):
    if previous is None:
        monkeypatch.delenv(PROGRESS_FILE_ENV, raising=False)
    else:
        monkeypatch.setenv(PROGRESS_FILE_ENV, previous)

    def behaviour(nb, out, progress, **kw):
        progress.write_text("measuring 1/2\nmeasuring 2/2\n")
        out.write_text("executed")
    fake_papermill.behaviour = behaviour
    output = tmp_path / "build" / "executed.ipynb"          # its directory does not exist yet
    assert notebooks.execute(notebook, output, {"measure": True}) == output
    assert output.read_text() == "executed"
    (nb, out, kwargs), = fake_papermill.calls
    assert (nb, out) == (str(notebook), str(output))
    assert kwargs["parameters"] == {"measure": True} and kwargs["kernel_name"] == notebooks.KERNEL
    assert kwargs["cwd"] == str(notebook.parent)                        # relative paths resolve beside the notebook
    assert capsys.readouterr().err == "measuring 1/2\nmeasuring 2/2\n"
    assert _progress_files(output.parent) == []
    assert notebooks.os.environ.get(PROGRESS_FILE_ENV) == previous


def test_execute_failure_is_one_line_naming_the_notebook_and_the_copy(tmp_path, fake_papermill, notebook):
    def behaviour(nb, out, progress, **kw):
        raise RuntimeError("An error occurred while executing cell 4:\n---\nValueError: no runs of 'tiering'\n")
    fake_papermill.behaviour = behaviour
    output = tmp_path / "out.ipynb"
    with pytest.raises(NotebookFailed) as err:
        notebooks.execute(notebook, output, {})
    assert str(err.value) == (f"01_study.ipynb: RuntimeError: ValueError: no runs of 'tiering' "
                              f"(executed copy: {output})")
    assert _progress_files(tmp_path) == []


def test_execute_failure_without_a_message(tmp_path, fake_papermill, notebook):
    def behaviour(nb, out, progress, **kw):
        raise KeyError()
    fake_papermill.behaviour = behaviour
    with pytest.raises(NotebookFailed, match=r"^01_study.ipynb: KeyError:  \(executed copy: "):
        notebooks.execute(notebook, tmp_path / "out.ipynb", {})


@pytest.mark.parametrize("kernel_obeys_sigint", [True, False])
def test_ctrl_c_interrupts_the_kernel_then_kills_it_and_reraises(tmp_path, monkeypatch, fake_papermill, notebook,
                                                                  kernel_obeys_sigint):
    monkeypatch.delenv(PROGRESS_FILE_ENV, raising=False)
    monkeypatch.setattr(notebooks, "GRACE_S", 0.2)
    stopped = threading.Event()
    sent: list[int] = []

    def signal_kernels(sig):
        sent.append(sig)
        if sig == signal.SIGKILL or kernel_obeys_sigint:
            stopped.set()
    monkeypatch.setattr(notebooks, "_signal_kernels", signal_kernels)

    def behaviour(nb, out, progress, **kw):     # a cell that runs until the kernel is signalled
        assert stopped.wait(30), "the kernel was never signalled"
        raise RuntimeError("KeyboardInterrupt")
    fake_papermill.behaviour = behaviour

    def ctrl_c(path, shown):                    # Ctrl-C arrives while the main thread watches the progress file
        raise KeyboardInterrupt
    monkeypatch.setattr(notebooks, "_echo_new_lines", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        notebooks.execute(notebook, tmp_path / "out.ipynb", {})
    assert sent == ([signal.SIGINT] if kernel_obeys_sigint else [signal.SIGINT, signal.SIGKILL])
    assert _progress_files(tmp_path) == [] and PROGRESS_FILE_ENV not in notebooks.os.environ


def _write_notebook(path: Path, cells: list) -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": notebooks.KERNEL, "language": "python", "display_name": "snaptax"}
    nb.cells = cells
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    return path


def _parameters_cell(source: str = 'rig: str = "local"  # a rig\nprofile: str = "quick"  # a profile\n'
                     'measure: bool = False  # measure first'):
    import nbformat

    return nbformat.v4.new_code_cell(source, metadata={"tags": ["parameters"]})


def _committed_form(tmp_path: Path) -> Path:
    """A notebook as papermill leaves it: its parameters cell, the injected cell after it, a cell with an output."""
    import nbformat

    injected = nbformat.v4.new_code_cell('# Parameters\nmeasure = True\n', metadata={"tags": ["injected-parameters"]})
    shown = nbformat.v4.new_code_cell("print(1)", metadata={"tags": []},
                                      outputs=[nbformat.v4.new_output("stream", name="stdout", text="1\n")])
    return _write_notebook(tmp_path / "01_x.ipynb", [_parameters_cell(), injected, shown])


def test_strip_injected_removes_that_cell_only_and_keeps_the_outputs(tmp_path):
    import nbformat

    nb_path = _committed_form(tmp_path)
    before = nbformat.read(nb_path, as_version=4)
    assert notebooks.strip_injected(nb_path) == 1
    after = nbformat.read(nb_path, as_version=4)
    assert [c.id for c in after.cells] == [before.cells[0].id, before.cells[2].id]
    assert after.cells[1].outputs == before.cells[2].outputs
    assert not nb_path.read_text().endswith("\n")                       # as papermill writes a notebook
    text = nb_path.read_text()
    assert notebooks.strip_injected(nb_path) == 0 and nb_path.read_text() == text   # nothing to strip: untouched


def test_defaults_are_the_parameters_cell_read_as_papermill_reads_it(tmp_path):
    nb_path = _committed_form(tmp_path)
    assert notebooks.defaults(nb_path) == {"rig": "local", "profile": "quick", "measure": False}


def test_in_place_execution_takes_only_the_notebooks_own_parameters(tmp_path, fake_papermill):
    nb_path = _committed_form(tmp_path)
    notebooks.check_in_place(nb_path, {"rig": "local", "profile": "quick", "measure": False})
    with pytest.raises(notebooks.ConfigError) as err:
        notebooks.execute(nb_path, nb_path, {"rig": "local", "profile": "smoke"})
    assert err.value.field == "profile" and "'smoke' is not its default 'quick'" in str(err.value)
    with pytest.raises(notebooks.ConfigError, match="field 'run_dir': is not a parameter"):
        notebooks.check_in_place(nb_path, {"run_dir": "/x"})
    assert fake_papermill.calls == []                                   # refused before anything ran


def test_in_place_execution_strips_the_injected_cell_a_copy_keeps_it(tmp_path, fake_papermill):
    import shutil

    import nbformat

    source = _committed_form(tmp_path)
    pristine = source.read_text()

    def behaviour(nb, out, progress, **kw):        # papermill writes the executed notebook, injected cell included
        out.write_text(pristine)
    fake_papermill.behaviour = behaviour
    copy = tmp_path / "build" / source.name
    notebooks.execute(source, copy, {"measure": True})
    assert len(nbformat.read(copy, as_version=4).cells) == 3             # an executed copy records what was injected
    in_place = tmp_path / "in-place" / source.name
    in_place.parent.mkdir()
    shutil.copy(source, in_place)
    notebooks.execute(in_place, in_place, {"rig": "local", "profile": "quick", "measure": False})
    tags = [c.metadata.get("tags") for c in nbformat.read(in_place, as_version=4).cells]
    assert tags == [["parameters"], []]


def test_the_kernel_is_started_on_unix_sockets(tmp_path, fake_papermill, notebook):
    fake_papermill.behaviour = lambda nb, out, progress, **kw: out.write_text("{}")
    notebooks.execute(notebook, tmp_path / "out.ipynb", {})
    (_, _, kwargs), = fake_papermill.calls
    manager = kwargs["config"].KernelManager
    assert manager.transport == "ipc" and len(manager.ip) + len("-65535") < 108     # a Unix socket's path limit
    assert not Path(manager.ip).parent.exists()                                      # removed after


def test_execute_all_says_which_of_how_many_and_the_running_total(tmp_path, monkeypatch, capsys):
    import math

    from snaptax import expect, studies
    from snaptax.plan import DiskNeed

    ran = []
    now = [100.0]
    took = iter([6 * 60, 2 * 60, 60])                  # what each notebook takes, in seconds

    def execute(nb, out, parameters):
        ran.append((nb, out, parameters))
        now[0] += next(took)
        return out
    monkeypatch.setattr(notebooks, "execute", execute)
    monkeypatch.setattr(notebooks.time, "monotonic", lambda: now[0])
    minutes = {"chain_length": 13.4, "engines": math.nan, "tiering": 14.0}
    monkeypatch.setattr(expect, "expect", lambda study, rig, profile: expect.Expectation(
        study.id, profile.name, minutes[study.id], "test", DiskNeed(1), True))
    chosen = [studies.get(s) for s in minutes]
    pairs = [(tmp_path / s.notebook, tmp_path / "out" / s.notebook) for s in chosen]
    assert notebooks.execute_all(pairs, "local", "quick", measure=True) == [out for _, out in pairs]
    assert capsys.readouterr().out.splitlines() == [
        "[1/3] chain_length — expect 13.4 min; total so far 0.0 of at least 27.4 min",
        "[2/3] engines — expect ? min; total so far 6.0 of at least 20.0 min",
        "[3/3] tiering — expect 14.0 min; total so far 8.0 of ≈22.0 min",
    ]
    assert [p for _, _, p in ran] == [{"rig": "local", "profile": "quick", "measure": True}] * 3
    took = iter([0])
    notebooks.execute_all(pairs[:1], "local", "quick", measure=False)
    assert capsys.readouterr().out == "[1/1] chain_length — on the published run (rig local, profile quick)\n"


def test_execute_all_in_place_refuses_before_the_first_notebook(tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(notebooks, "execute", lambda nb, out, parameters: ran.append(nb) or out)
    fine, other = _committed_form(tmp_path), tmp_path / "other" / "02_y.ipynb"
    other.parent.mkdir()
    _write_notebook(other, [_parameters_cell('rig: str = "local"  # a rig\nprofile: str = "smoke"  # a profile\n'
                                             'measure: bool = False  # measure first')])
    with pytest.raises(notebooks.ConfigError, match="'quick' is not its default 'smoke'"):
        notebooks.execute_all([(fine, fine), (other, other)], "local", "quick", measure=False)
    assert ran == [] and capsys.readouterr().out == ""
