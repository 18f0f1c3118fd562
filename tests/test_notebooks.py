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
    """A papermill whose execute_notebook runs `behaviour(notebook, output, progress_path, **kwargs)`."""
    module = types.SimpleNamespace(calls=[], behaviour=None)

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
