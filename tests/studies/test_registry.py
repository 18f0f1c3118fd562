"""The registry's uniform view of a study: what its plan predicts without measuring, and which run it opens."""
import json
import math

import pytest

from snaptax import profiles, studies
from snaptax.host import rig as rigmod


@pytest.mark.parametrize("study", studies.REGISTRY, ids=lambda s: s.id)
def test_planned_seconds_is_what_measure_records(study):
    """The artifact table scales the full plan's prediction by the quick runs' measured / planned ratio, so the
    prediction must be the very figure the study's measure gives RunSession (its Setup; the manifest records it)."""
    rig = rigmod.load("local")
    for name in profiles.PROFILES:
        profile = profiles.get(name)
        planned = study.planned_seconds(profile, "local")
        assert study.measure_module().setup(rig, profile).planned_seconds == planned, (study.id, name)
        assert math.isfinite(planned) and planned >= 0, (study.id, name)


def test_every_registered_study_is_checked_against_the_contract():
    """studies.checked types every registered study's four modules by the contract (mypy checks them there)."""
    from snaptax.studies import checked

    assert list(checked.MODULES) == studies.ids()
    for study in studies.REGISTRY:
        m = checked.MODULES[study.id]
        assert (m.plan, m.measure, m.analyse, m.present) == tuple(study.module(part) for part in
                                                                  ("plan", "measure", "analyse", "present"))


def test_only_the_engine_comparison_predicts_no_time_and_says_why():
    untimed = [s.id for s in studies.REGISTRY if s.planned_seconds(profiles.get("full")) == 0]
    assert untimed == ["engines"]
    assert "fixed number of I/Os" in studies.get("engines").no_planned_time()
    assert studies.get("chain_length").no_planned_time() == "its plan predicts no time"


def test_a_study_opens_the_newest_run_of_its_profile(data_dir):
    """A smoke run published after the quick ones changes nothing that reads the quick runs."""
    for name, profile in (("20260101T000000Z-quick", "quick"), ("20260102T000000Z-smoke", "smoke")):
        run = data_dir / "local" / "chain_length" / name
        run.mkdir(parents=True)
        (run / "manifest.json").write_text(json.dumps({"profile": {"name": profile}}))
    study = studies.get("chain_length")
    assert study.newest_run("local", "quick").name == "20260101T000000Z-quick"
    assert study.newest_run("local", "smoke").name == "20260102T000000Z-smoke"
    with pytest.raises(studies.NoPublishedRun):
        study.newest_run("local", "full")


def test_the_paper_selection_opens_a_studys_full_run_else_its_quick_run(data_dir):
    """'paper' reads, per study, the newest full run where one is published, else the newest quick run; never a
    smoke run; and it is a way of reading runs, not of measuring them."""
    def publish(study, name):
        run = data_dir / "local" / study / name
        run.mkdir(parents=True)
        (run / "manifest.json").write_text(json.dumps({"profile": {"name": name.rsplit("-", 1)[1]}}))

    for name in ("20260101T000000Z-quick", "20260102T000000Z-full", "20260103T000000Z-quick"):
        publish("chain_length", name)
    publish("lifecycle", "20260101T000000Z-quick")
    publish("tiering", "20260105T000000Z-smoke")
    assert studies.get("chain_length").newest_run("local", "paper").name == "20260102T000000Z-full"
    assert studies.get("lifecycle").newest_run("local", "paper").name == "20260101T000000Z-quick"
    with pytest.raises(studies.NoPublishedRun, match="'full' or 'quick'"):
        studies.get("tiering").newest_run("local", "paper")
    assert profiles.run_profiles("paper") == ("full", "quick") and profiles.run_profiles("smoke") == ("smoke",)
    with pytest.raises(profiles.ConfigError, match="unknown profile 'paper'"):
        profiles.get("paper")
    with pytest.raises(profiles.ConfigError, match="unknown profile 'fast'.*or, to read runs only, paper"):
        profiles.run_profiles("fast")


def test_the_studies_with_parts_are_typed_as_such_and_measure_a_part_as_planned():
    """studies.checked.PARTED holds exactly the studies whose plan has parts (mypy checks them against
    contract.PartedPlanModule); measuring a part plans the part's points and seconds and records its set, and a
    study without parts refuses one in one line."""
    from snaptax.errors import ConfigError
    from snaptax.studies import checked

    rig = rigmod.load("local")
    profile = profiles.get("quick")
    assert sorted(checked.PARTED) == sorted(s.id for s in studies.REGISTRY if s.parts(profile))
    for study_id in checked.PARTED:
        study = studies.get(study_id)
        for part, seconds in study.part_seconds(profile, "local").items():
            setup = study.measure_module().setup(rig, profile, None, part)
            assert setup.planned_seconds == seconds and setup.part_set == study.parts(profile), (study_id, part)
            # a part measures less than the whole study; every part some time (memory_dump's guest part no fio run)
            assert 0 <= setup.planned_points < study.measure_module().setup(rig, profile).planned_points, part
            assert setup.planned_seconds > 0 and (setup.planned_points > 0 or part == "guest"), (study_id, part)
        assert study.measure_module().setup(rig, profile).part_set == ()
        with pytest.raises(ConfigError, match=f"{study_id} study: field 'part': unknown part 'x' \\(one of: "):
            study.check_part(profile, "x")
    for study in studies.REGISTRY:
        if study.id not in checked.PARTED:
            with pytest.raises(ConfigError, match=f"{study.id} study: field 'part': 'x': the study has no parts"):
                study.check_part(profile, "x")
            with pytest.raises(ConfigError, match="field 'part'"):
                study.measure_module().setup(rig, profile, None, "x")
