"""The package's version has one source, ``distpriv/_version.py``."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import distpriv
from distpriv.util.version import __version__

ROOT = Path(__file__).resolve().parents[1]


def test_installed_metadata_matches_the_literal():
    # The installed distribution's metadata (built by setuptools from pyproject.toml's
    # dynamic version) is the same string the package reports without importlib.metadata.
    assert importlib.metadata.version("distpriv") == __version__ == distpriv.__version__


def test_pyproject_reads_the_version_from_the_module():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "distpriv.util.version.__version__"


def test_version_is_a_pep440_release_string():
    # setuptools reads the literal statically (ast), so it must stay a plain string.
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]\d+|rc\d+)?(\.post\d+)?(\.dev\d+)?", __version__)


def test_cli_version_flag(capsys):
    from distpriv.cli import main

    try:
        main(["--version"])
    except SystemExit as stop:
        assert stop.code == 0
    assert capsys.readouterr().out.strip() == f"distpriv {__version__}"
