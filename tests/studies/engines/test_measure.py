"""The engine comparison's measuring loop through the one measure skeleton (Study.run), wired to fakes (no root, no
daemons): one session, the stale loop devices detached inside it, one fresh engine per variant in plan order, the
plan's counts for the progress line, the study's description of every variant."""
import contextlib
from pathlib import Path

import snaptax.host.backends
import snaptax.host.rig
import snaptax.record
from snaptax import profiles, studies
from snaptax.studies.engines import measure, plan as planmod
from tests.synthetic import rig as synthetic_rig


class FakeSession:
    made: list["FakeSession"] = []

    def __init__(self, rig, study, profile, parameters, **kw):
        self.args = (rig, study, profile, parameters, kw)
        self.variants: dict[str, dict] = {}
        self.executed: list[str] = []
        self.published = Path("/nonexistent/published")
        FakeSession.made.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    @contextlib.contextmanager
    def in_variant(self, name, description):
        self.variants[name] = description
        yield


class FakeEngine:
    def __init__(self, v):
        self.v = v

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def describe(self):
        return {"engine": self.v.family}

    def execute(self, plan, session):
        assert plan == planmod.build_plan(profiles.get("smoke")).variant(self.v.name).plan
        session.executed.append(self.v.name)


def test_one_session_one_engine_per_variant(tmp_path, monkeypatch):
    detached = []
    monkeypatch.setattr(studies.os, "geteuid", lambda: 0)
    monkeypatch.setattr(snaptax.host.rig, "load", lambda name: synthetic_rig(tmp_path))
    monkeypatch.setattr(snaptax.record, "RunSession", FakeSession)
    monkeypatch.setattr(snaptax.host.backends, "detach_stale_loops",
                        lambda work_dir: detached.append(len(FakeSession.made)))
    monkeypatch.setattr(measure, "engine_for", lambda v, rig, dev, size: FakeEngine(v))
    FakeSession.made.clear()
    assert studies.get("engines").run("t", "smoke") == Path("/nonexistent/published")
    (session,) = FakeSession.made
    assert detached == [1]                                           # once, inside the session
    rig, study, profile, parameters, kw = session.args
    p = profiles.get("smoke")
    plan = planmod.build_plan(p)
    assert study == "engines" and profile == p                       # a Profile, not a name
    assert kw == {"devices_used": ("ssd",), "planned_points": plan.points(), "planned_seconds": plan.fio_seconds(),
                  "part": None}
    assert parameters["scale"]["disk_size"] == planmod.scale(p).disk_size and parameters["io_size"] == 4096
    names = [v.variant for v in plan.variants]
    assert session.executed == names == parameters["variants"]
    assert session.variants["lvmthin-c64k"] == {"engine": "lvmthin",
                                                "study": planmod.variants(p)[-1].describe()}
