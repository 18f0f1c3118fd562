"""The package's metadata (pyproject.toml), its citation (CITATION.cff) and its licence agree and are complete: one
author, one version, one licence, a console script that is the CLI, and a preferred citation that says what it is."""
import re
import tomllib
from importlib import import_module

import yaml

import snaptax
from snaptax import paths

PROJECT = tomllib.loads((paths.REPO_ROOT / "pyproject.toml").read_text())["project"]
CITATION = yaml.safe_load((paths.REPO_ROOT / "CITATION.cff").read_text())
AUTHOR = "The snaptax authors"


def test_pyproject_metadata_is_complete():
    assert PROJECT["readme"] == "README.md" and (paths.REPO_ROOT / PROJECT["readme"]).is_file()
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    assert (paths.REPO_ROOT / "LICENSE").read_text().startswith("MIT License")
    assert PROJECT["authors"] == [{"name": AUTHOR}]
    assert PROJECT["urls"] and PROJECT["description"] and PROJECT["keywords"]


def test_the_console_script_is_the_cli():
    module, _, name = PROJECT["scripts"]["snaptax"].partition(":")
    from snaptax import cli
    assert getattr(import_module(module), name) is cli.main


def test_every_url_is_one_the_paper_cites():
    """No address is invented: each is a published study the paper's bibliography cites."""
    cited = set(re.findall(r"url\s*=\s*\{([^}]*)\}", (paths.PAPER_DIR / "refs.bib").read_text()))
    assert set(PROJECT["urls"].values()) <= cited


def test_one_version_one_author_one_licence():
    assert PROJECT["version"] == snaptax.__version__ == CITATION["version"] == CITATION["preferred-citation"]["version"]
    assert CITATION["authors"] == CITATION["preferred-citation"]["authors"] == [{"name": AUTHOR}]
    assert f"Copyright (c) 2026 {AUTHOR}" in (paths.REPO_ROOT / "LICENSE").read_text()
    assert CITATION["license"] == PROJECT["license"]


def test_the_preferred_citation_says_what_it_is_and_invents_no_venue():
    pc = CITATION["preferred-citation"]
    assert pc["type"] in ("report", "software") and pc["title"] == CITATION["title"]
    assert not {"journal", "conference", "publisher", "institution", "doi", "url", "volume", "issue"} & set(pc)
    assert "paper/snaptax.pdf" in pc["notes"] and "not published in a journal" in pc["notes"]
    for key in ("cff-version", "message", "title", "authors", "abstract", "date-released"):
        assert CITATION.get(key), key
