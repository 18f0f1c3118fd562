"""provenance: tool versions, git state and host facts from faked subprocesses and /proc files (nothing is run)."""
import io
import subprocess
import sys
from datetime import datetime

import pytest

from snaptax import __version__, provenance


def _completed(stdout="", stderr="", returncode=0):
    return subprocess.CompletedProcess([], returncode, stdout=stdout, stderr=stderr)


def test_utc_now_is_iso_utc_with_microseconds():
    stamp = provenance.utc_now()
    assert stamp.endswith("Z")
    parsed = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
    assert len(stamp.split(".")[1]) == 7 and parsed.year >= 2024        # 6 digits and the Z


@pytest.fixture
def which_all(monkeypatch):
    monkeypatch.setattr(provenance.shutil, "which", lambda name: f"/usr/bin/{name}")


def test_first_line_is_the_first_line_of_stdout(which_all, monkeypatch):
    calls = []

    def run(argv, **kw):
        calls.append(argv)
        return _completed(stdout="fio-3.38\nsecond line\n")
    monkeypatch.setattr(provenance.subprocess, "run", run)
    assert provenance._first_line(["fio", "--version"]) == "fio-3.38"
    assert calls == [["fio", "--version"]]


def test_first_line_falls_back_to_stderr(which_all, monkeypatch):
    monkeypatch.setattr(provenance.subprocess, "run", lambda argv, **kw: _completed(stderr="  nbdkit 1.42\n"))
    assert provenance._first_line(["nbdkit", "--version"]) == "nbdkit 1.42"


@pytest.mark.parametrize("outcome", [_completed(), _completed(stdout="\n  \n"),
                                     OSError("exec format error"), subprocess.TimeoutExpired(["x"], 20)])
def test_first_line_is_none_without_an_answer(which_all, monkeypatch, outcome):
    def run(argv, **kw):
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome
    monkeypatch.setattr(provenance.subprocess, "run", run)
    assert provenance._first_line(["qemu-img", "--version"]) is None


def test_first_line_does_not_run_a_missing_tool(monkeypatch):
    monkeypatch.setattr(provenance.shutil, "which", lambda name: None)
    monkeypatch.setattr(provenance.subprocess, "run", lambda *a, **kw: pytest.fail("ran a missing tool"))
    assert provenance._first_line(["nosuch-tool", "--version"]) is None


def test_tool_versions_names_every_tool_and_ours(monkeypatch):
    monkeypatch.setattr(provenance, "_first_line", lambda argv: f"{argv[0]} 1.0" if argv[0] != "nbdkit" else None)
    versions = provenance.tool_versions()
    assert versions["fio"] == "fio 1.0" and versions["qemu-system-x86_64"] == "qemu-system-x86_64 1.0"
    assert versions["nbdkit"] is None                                         # a missing tool is recorded as such
    assert versions["python"] == sys.version.split()[0] and versions["snaptax"] == __version__
    assert set(versions) == {"fio", "qemu-storage-daemon", "qemu-img", "qemu-system-x86_64", "nbdkit", "python",
                             "snaptax"}


def _git(answers):
    """A fake subprocess.run answering `git -C ROOT <args>` from {first arg: CompletedProcess or exception}."""
    def run(argv, **kw):
        assert argv[:3] == ["git", "-C", str(provenance.paths.REPO_ROOT)]
        answer = answers[argv[3]]
        if isinstance(answer, BaseException):
            raise answer
        return answer
    return run


@pytest.mark.parametrize(("status", "dirty"), [("", False), (" M src/snaptax/bench/harness.py\n", True)])
def test_git_state_commit_and_dirty(monkeypatch, status, dirty):
    monkeypatch.setattr(provenance.subprocess, "run", _git({"rev-parse": _completed("0123abc\n"),
                                                            "status": _completed(status)}))
    assert provenance.git_state() == {"commit": "0123abc", "dirty": dirty}


@pytest.mark.parametrize("failure", [_completed(stderr="fatal: not a git repository", returncode=128),
                                     FileNotFoundError("git"), subprocess.TimeoutExpired(["git"], 20)])
def test_git_state_unknown_is_none_not_clean(monkeypatch, failure):
    monkeypatch.setattr(provenance.subprocess, "run", _git({"rev-parse": failure, "status": failure}))
    assert provenance.git_state() == {"commit": None, "dirty": None}


CPUINFO = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n"
MEMINFO = "MemTotal:        8141172 kB\nMemFree:          123456 kB\n"


def _fake_open(files):
    def fake(path, *a, **kw):
        if path not in files:
            raise FileNotFoundError(path)
        return io.StringIO(files[path])
    return fake


def test_host_reads_cpu_model_and_memory(monkeypatch):
    monkeypatch.setattr(provenance, "open", _fake_open({"/proc/cpuinfo": CPUINFO, "/proc/meminfo": MEMINFO}),
                        raising=False)
    h = provenance.host()
    assert h["cpu"] == "Intel(R) Xeon(R) CPU @ 2.20GHz" and h["mem_kib"] == 8141172
    assert h["cpus"] >= 1 and h["kernel"] and h["machine"]


@pytest.mark.parametrize("files", [{}, {"/proc/cpuinfo": "processor\t: 0\n", "/proc/meminfo": "MemFree: 1 kB\n"}])
def test_host_without_proc_facts_records_none(monkeypatch, files):
    monkeypatch.setattr(provenance, "open", _fake_open(files), raising=False)
    h = provenance.host()
    assert h["cpu"] is None and h["mem_kib"] is None


def test_collect_has_its_four_parts(monkeypatch):
    monkeypatch.setattr(provenance, "tool_versions", lambda: {"fio": "fio-3"})
    monkeypatch.setattr(provenance, "git_state", lambda: {"commit": "c", "dirty": False})
    monkeypatch.setattr(provenance, "host", lambda: {"cpus": 2})
    out = provenance.collect()
    assert out["tools"] == {"fio": "fio-3"} and out["git"]["commit"] == "c" and out["host"] == {"cpus": 2}
    assert out["collected_utc"].endswith("Z")


def test_uncommitted_diff_covers_the_code_that_measures_only(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)
    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    (tmp_path / "src").mkdir()
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "src" / "m.py").write_text("a = 1\n")
    (tmp_path / "notebooks" / "n.ipynb").write_text("{}\n")
    git("add", ".")
    git("commit", "-q", "-m", "c")
    assert provenance.uncommitted_diff(tmp_path) == ""
    (tmp_path / "notebooks" / "n.ipynb").write_text('{"x": 1}\n')       # an output, not the code that measures
    assert provenance.uncommitted_diff(tmp_path) == ""
    (tmp_path / "src" / "m.py").write_text("a = 2\n")
    diff = provenance.uncommitted_diff(tmp_path)
    assert diff is not None and "+a = 2" in diff and "n.ipynb" not in diff


def test_uncommitted_diff_is_none_outside_a_repository(tmp_path):
    assert provenance.uncommitted_diff(tmp_path) is None


def _repo(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)
    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    for d in ("src", "notebooks", "data"):
        (tmp_path / d).mkdir()
    (tmp_path / "src" / "m.py").write_text("a = 1\n")
    (tmp_path / "notebooks" / "n.ipynb").write_text("{}\n")
    git("add", ".")
    git("commit", "-q", "-m", "c")


def test_code_is_dirty_only_when_the_code_that_measures_changed_or_gained_a_file(tmp_path, monkeypatch):
    _repo(tmp_path)
    monkeypatch.setattr(provenance.paths, "REPO_ROOT", tmp_path)
    (tmp_path / "notebooks" / "n.ipynb").write_text('{"x": 1}\n')      # an output: not the code that measures
    (tmp_path / "data" / "run").write_text("new run\n")
    assert provenance.git_state()["dirty"] is False and provenance.uncommitted_code_files() == []
    (tmp_path / "src" / "new.py").write_text("b = 1\n")                 # a new module the code may import
    assert provenance.git_state()["dirty"] is True
    assert provenance.uncommitted_code_files() == ["src/new.py"]


def test_measuring_from_uncommitted_code_is_refused_unless_allowed(tmp_path, monkeypatch):
    from snaptax import record

    _repo(tmp_path)
    monkeypatch.setattr(provenance.paths, "REPO_ROOT", tmp_path)
    monkeypatch.delenv(record.ALLOW_DIRTY_ENV, raising=False)
    record.require_committed_code()                                      # clean: nothing to say
    (tmp_path / "src" / "m.py").write_text("a = 2\n")
    with pytest.raises(record.UncommittedCode, match=r"uncommitted changes \(src/m.py\).*--allow-dirty"):
        record.require_committed_code()
    monkeypatch.setenv(record.ALLOW_DIRTY_ENV, "1")
    record.require_committed_code()


def test_tool_drift_names_each_tool_whose_version_differs_in_one_line():
    recorded = [{"fio": "fio-3.33", "qemu-storage-daemon": "qsd 7.2.22"}, {"fio": "fio-3.33"},
                {"fio": "fio-3.35", "nbdkit": None}]
    same = {"fio": "fio-3.33", "qemu-storage-daemon": "qsd 7.2.22", "nbdkit": "nbdkit 1.32.5"}
    line = provenance.tool_drift(recorded, same)
    assert line.count("\n") == 0 and "fio: 'fio-3.33' here, 'fio-3.35' in 1 run" in line and "qemu" not in line
    newer = {**same, "fio": "fio-3.35", "qemu-storage-daemon": "qsd 7.2.23"}
    line = provenance.tool_drift(recorded, newer)
    assert "'fio-3.33' in 2 runs" in line and "qemu-storage-daemon: 'qsd 7.2.23' here, 'qsd 7.2.22' in 1 run" in line
    assert provenance.tool_drift(recorded[1:2], same) == ""
