"""The command line: one clear line on stderr and a non-zero exit for bad input; nothing written to data/."""
import subprocess
import sys

import pytest

from snaptax import paths


def snaptax(*args, env=None):
    return subprocess.run([sys.executable, "-m", "snaptax", *args], capture_output=True, text=True,
                          cwd=paths.REPO_ROOT, env=env, timeout=120)


def test_rig_check_local_says_what_it_is():
    out = snaptax("rig", "check", "local")
    assert out.returncode == 0, out.stderr
    assert "device ssd" in out.stdout and "engine qcow2" in out.stdout


def test_rig_check_refuses_the_disabled_example_without_failing():
    out = snaptax("rig", "check", "example-attached")
    assert out.returncode == 0
    assert "refused" in out.stdout and "disabled" in out.stdout


@pytest.mark.parametrize("args,needle", [
    (("rig", "check", "missing-rig"), "missing-rig.yaml: field '(file)'"),
    (("run", "chain_length", "--profile", "enormous"), "field 'PROFILE'"),
    (("run", "no-such-study", "--profile", "smoke"), "field 'STUDY'"),
    (("render", "--profile", "huge"), "field 'PROFILE'"),
    (("render", "--rig", "nosuchrig"), "nosuchrig.yaml: field '(file)'"),
    (("claims", "--profile", "huge"), "field 'PROFILE'"),
    (("claims", "--format", "xml"), "field 'FORMAT'"),
    (("claims", "--width", "wide"), "field 'WIDTH'"),
    (("claims", "--width", "40"), "field 'WIDTH'"),
    (("notebook", "notebooks/01_chain_length.ipynb", "{tmp}/x.ipynb", "--rig", "nosuchrig"), "field '(file)'"),
    (("rig", "check", "rigs/"), "is a directory"),
    (("run", "chain_length", "--profile", "smoke", "--part", "lvm"),
     "field 'part': unknown part 'lvm' (one of: on-disk-metadata.r0, in-memory-metadata.r0, lvm-thin.r0)"),
    (("run", "tiering", "--profile", "smoke", "--part", "sas"), "field 'part': 'sas': the study has no parts"),
])
def test_bad_input_gives_one_line(args, needle, data_dir, tmp_path):
    out = snaptax(*(a.format(tmp=tmp_path) for a in args))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], out.stderr
    assert not data_dir.exists()


def test_malformed_rig_file_names_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nkind: embedded\ndevices:\n  d: {type: file, medium: floppy, capacity: 1G}\n")
    out = snaptax("rig", "check", str(bad))
    assert out.returncode == 2
    assert out.stderr.strip() == (f"snaptax: {bad}: field 'devices.d.medium': 'floppy' is not one of ssd, hdd, "
                                  "nvme, tiered")


def test_missing_tool_names_the_package(monkeypatch):
    from snaptax.errors import MissingTool
    from snaptax.host import procs
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(MissingTool) as err:
        procs.require("qemu-storage-daemon")
    assert str(err.value) == ("'qemu-storage-daemon' not found: install the Debian package 'qemu-system-common' "
                              "(or run 'make setup')")


def test_build_plugin_without_the_compiler_names_the_package(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/gcc")                # make setup's build honours $CC
    out = snaptax("build-plugin", "--force")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["snaptax: '/nonexistent/gcc' not found: install the Debian package "
                                               "'gcc' (or run 'make setup')"]


def test_measuring_without_root_says_so_in_one_line(data_dir):
    if __import__("os").geteuid() == 0:
        out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                              "snaptax", "run", "chain_length", "--profile", "smoke"], capture_output=True, text=True,
                             cwd=paths.REPO_ROOT, timeout=120, env={"PATH": "/usr/bin:/bin",
                                                                     "PYTHONPATH": str(paths.REPO_ROOT / "src")})
    else:
        out = snaptax("run", "chain_length", "--profile", "smoke")
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs root" in lines[0], out.stderr


@pytest.mark.committed
def test_claims_prints_the_table_from_the_committed_data():
    """make claims: every line fits a 120-column terminal, it ends with the tally per seed, the runs with flagged
    measurements are marked late; the JSON form holds every row with what checks read (issue 47)."""
    import json
    import os

    from snaptax import claims

    env = {k: v for k, v in os.environ.items() if k != "SNAPTAX_DATA_DIR"}   # the checkout's data/
    out = snaptax("claims", "--rig", "local", "--profile", "quick", env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert any(line.startswith("claim ") and "verdict" in line for line in lines) and "\nC001-1 " in out.stdout
    assert "all seeds" in out.stdout[out.stdout.index("tally per seed"):]
    doc = json.loads(snaptax("claims", "--rig", "local", "--profile", "quick", "--format", "json", env=env).stdout)
    assert doc["rows"] and {"claim", "seed", "published", "tolerance", "ours", "verdict", "effect_ratio", "run",
                            "late", "model"} <= set(doc["rows"][0])
    assert all(set(r["ours"]) >= {"value", "low", "high", "n", "independent"} for r in doc["rows"])
    assert {r["verdict"] for r in doc["rows"]} <= set(claims.VERDICTS)
    assert sum(doc["tally"]["all"].values()) == len(doc["rows"])
    for study in {r["study"] for r in doc["rows"] if r["late"]}:
        assert any(line.startswith(f"{study}: run ") and "LATE" in line for line in lines), study


def test_every_command_prints_its_help():
    # argparse %-formats help strings: a literal '%' in one ("95 % CI") crashed --help.
    from snaptax import cli
    commands = [()] + [(name,) for name in cli.parser()._subparsers._group_actions[0].choices]
    for args in commands:
        out = snaptax(*args, "--help")
        assert out.returncode == 0 and "usage:" in out.stdout, (args, out.stderr[-300:])


def test_version():
    import snaptax as package
    out = snaptax("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"snaptax {package.__version__}"


def test_help_lists_the_rigs_profiles_and_studies():
    from snaptax import profiles, studies
    from snaptax.host import rig
    for command in ("run", "plan", "render", "claims", "notebook", "notebooks", "compare"):
        out = " ".join(snaptax(command, "--help").stdout.split())     # argparse wraps at any space
        assert "{" + ",".join(profiles.PROFILES) + "}" in out, command
        assert all(name in out for name in rig.names()) and "path of a rig file" in out, command
        if command in ("run", "plan"):
            assert ", ".join(studies.ids()) in out, command


def test_plan_prints_one_line_per_study_and_the_total(data_dir):
    from snaptax import profiles, studies
    out = snaptax("plan", "--profile", "quick", "--rig", "local")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    rows = [line for line in lines if line.split(" ", 1)[0] in studies.ids()]
    assert [r.split()[0] for r in rows] == studies.ids()
    assert all(" min " in r and "GiB" in r and "needed" in r for r in rows)
    assert all("plan's prediction" in r or "predicts no time" in r for r in rows)   # data_dir: no runs
    assert lines[-1].startswith("total at least")                                   # engines' time is not known
    one = snaptax("plan", "chain_length", "--profile", "smoke").stdout
    assert "fio runs" in one and sum(line.startswith("chain_length") for line in one.splitlines()) == 1
    # a study measured in parts: each part with its planned minutes and the command that measures it
    assert "--part NAME" in one and all(f"  {p}: plan's prediction" in one for p in
                                        studies.get("chain_length").parts(profiles.get("smoke")))
    assert "--part" not in snaptax("plan", "tiering", "--profile", "smoke").stdout


def test_infer_writes_the_points_and_refuses_one_outside_its_range(monkeypatch, tmp_path, capsys):
    from snaptax import cli, inferpoints, operatingpoints

    where = tmp_path / "operating-points" / "local.yaml"
    monkeypatch.setattr(operatingpoints, "path", lambda rig: where)
    monkeypatch.setattr(inferpoints, "path", lambda rig: where)
    good = operatingpoints.OperatingPoint("vsan_sparse", 0.99, 0.97, 1.0, "metadata_cache/r", "c")
    monkeypatch.setattr(inferpoints, "infer", lambda rig, profile, only=None: {"vsan_sparse": good})
    assert cli.main(["infer", "--dry-run"]) == 0 and not where.exists()
    assert cli.main(["infer"]) == 0 and operatingpoints.read("local") == {"vsan_sparse": good}
    out = capsys.readouterr().out
    assert "vsan_sparse: 0.9900 [0.9700, 1.0000] from metadata_cache/r" in out and "vmfs_sesparse: not inferred" in out
    bad = operatingpoints.OperatingPoint("vsan_sparse", 0.99, 0.96, 1.07, "metadata_cache/r", "c")
    monkeypatch.setattr(inferpoints, "infer", lambda rig, profile, only=None: {"vsan_sparse": bad})
    assert cli.main(["infer"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "vsan_sparse" in err and "outside [0, 1]" in err
    assert operatingpoints.read("local") == {"vsan_sparse": good}        # nothing written
    assert cli.main(["infer", "--stand-in", "bogus"]) == 2                # not an inferred stand-in: one line
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--stand-in" in err and "bogus" in err and "esx35_redolog" in err
