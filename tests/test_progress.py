"""Progress lines: point of how many, and an ETA from the plan."""
from snaptax import progress


def test_eta_from_planned_time_and_from_points(capsys, monkeypatch):
    monkeypatch.delenv(progress.PROGRESS_FILE_ENV, raising=False)
    clock = iter([0.0, 0.0, 10.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    p = progress.Progress("s", points=4, planned_seconds=40.0)
    p.start()
    p.advance("a", 10.0)            # a quarter done after 10 s: 30 s to go
    err = capsys.readouterr().err
    assert "1/4 a" in err and "ETA 30 s" in err
    clock2 = iter([0.0, 0.0, 5.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock2))
    q = progress.Progress("s", points=2, planned_seconds=0.0)   # fixed-size jobs: by points
    q.start()
    q.advance("b", 1.0)
    assert "ETA 5 s" in capsys.readouterr().err


def test_lines_go_to_the_progress_file_when_a_runner_listens(tmp_path, monkeypatch, capsys):
    f = tmp_path / "p"
    monkeypatch.setenv(progress.PROGRESS_FILE_ENV, str(f))
    progress.say("hello")
    assert f.read_text() == "hello\n" and capsys.readouterr().err == ""
