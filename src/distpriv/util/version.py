"""The version string of the package (docs/architecture.md §2: never import the package root).

The one source of the version: ``pyproject.toml`` reads it from here
(``[tool.setuptools.dynamic]``, statically), so the installed metadata and
``distpriv.__version__`` cannot disagree (tests/test_version.py). A literal rather than
``importlib.metadata.version("distpriv")``: that lookup imports ``importlib.metadata`` and
``email`` and scans ``sys.path`` for the distribution, about 20 ms of every cold command,
and it answered "0.0.0+unknown" from an uninstalled source tree.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
