"""The version string of the installed package (DESIGN.md §2: never import the package root)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("distpriv")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"
