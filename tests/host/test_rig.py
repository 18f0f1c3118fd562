import textwrap

import pytest

from snaptax.errors import ConfigError
from snaptax.host import rig as rigmod


def write(tmp_path, text):
    p = tmp_path / "r.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def test_shipped_rigs_validate():
    local = rigmod.load("local")
    assert local.kind == "embedded" and local.device().type == "file"
    attached = rigmod.load("example-attached")
    assert attached.kind == "attached" and not attached.enabled and not attached.allow_destroy
    assert all(d.path.startswith("/dev/disk/by-id/") for d in attached.devices if d.type == "block")


def test_missing_file_names_the_file():
    with pytest.raises(ConfigError, match=r"nope.yaml: field '\(file\)'"):
        rigmod.load("nope")


@pytest.mark.parametrize("body,field", [
    ("name: x\nkind: embedded\ndevices: {a: {type: file, medium: ssd, capacity: 1G}}\ncolour: red\n", "colour"),
    ("name: x\nkind: sideways\ndevices: {a: {type: file, medium: ssd, capacity: 1G}}\n", "kind"),
    ("name: x\nkind: embedded\ndevices: {a: {type: file, medium: tape, capacity: 1G}}\n", "devices.a.medium"),
    ("name: x\nkind: embedded\ndevices: {a: {type: file, medium: ssd, capacity: huge}}\n", "devices.a.capacity"),
    ("name: x\nkind: embedded\ndevices: {a: {type: file, medium: ssd}}\n", "devices.a.capacity"),
    ("name: x\nkind: attached\ndevices: {a: {type: block, medium: hdd, capacity: 1G, path: /dev/sda}}\n",
     "devices.a.path"),
    ("name: x\nkind: embedded\ndevices: {a: {type: block, medium: hdd, capacity: 1G, path: /dev/disk/by-id/x}}\n",
     "kind"),
    ("name: x\nkind: embedded\nengines: [zfs]\ndevices: {a: {type: file, medium: ssd, capacity: 1G}}\n", "engines"),
    ("name: x\nkind: embedded\nenabled: maybe\ndevices: {a: {type: file, medium: ssd, capacity: 1G}}\n", "enabled"),
    ("kind: embedded\ndevices: {a: {type: file, medium: ssd, capacity: 1G}}\n", "name"),
    ("name: x\nkind: embedded\ndevices: [1, 2\n", "line"),
])
def test_malformed_rig_names_the_field(tmp_path, body, field):
    with pytest.raises(ConfigError) as err:
        rigmod.load(write(tmp_path, body))
    assert f"field '{field}" in str(err.value)
    assert "\n" not in str(err.value)


def test_work_dir_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv("SNAPTAX_WORK_DIR", str(tmp_path / "w"))
    assert rigmod.load("local").work_dir == tmp_path / "w"
