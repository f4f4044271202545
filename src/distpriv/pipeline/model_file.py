"""Model files of ``distpriv calibrate``: a Gaussian query model and per-mechanism options.

Format (every key except ``model.means`` and a covariance is optional)::

    title = "Chen & Ohrimenko 2023, example after Thm 4.5"

    [model]
    labels = ["theta1", "theta2"]           # names of the hypotheses
    statistics = ["x1", "x2"]               # names of the released statistics
    means = [[100, 101], [99, 102]]         # one row per theta
    covariance = [[22, -6], [-6, 13]]       # shared by every theta ...
    # covariances = [[[...]], [[...]]]      # ... or one matrix per theta
    pairs = [["theta1", "theta2"]]          # default: every pair

    [options.groupdp-g]                     # per-mechanism options
    group_size = 100
    sensitivities = [0.73, 0.15]

Unknown keys are errors (:class:`~distpriv.errors.ConfigError`), so that a typo cannot
silently change what is protected. Release configurations: :mod:`.config`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..central import MECHANISMS
from ..errors import ConfigError, DistPrivError
from ..querymodel import GaussianQueryModel
from .toml_file import check_keys, read_toml

__all__ = ["ModelConfig", "load_model_config"]

_TOP_KEYS = {"title", "model", "options"}
_MODEL_KEYS = {"labels", "statistics", "means", "covariance", "covariances", "pairs"}


@dataclass(frozen=True)
class ModelConfig:
    """A parsed model file: the query model, per-mechanism options, and a title."""

    model: GaussianQueryModel
    options: dict[str, dict[str, Any]]
    title: str
    path: str

    def options_for(self, mechanism: str) -> dict[str, Any]:
        """The file's options of ``mechanism`` (its ``[options.<name>]`` table), or none."""
        return dict(self.options.get(mechanism, {}))


def load_model_config(path: str | Path) -> ModelConfig:
    """Read a Gaussian query model (and mechanism options) from a TOML file.

    Raises
    ------
    ConfigError
        Missing file, invalid TOML, unknown keys, or an invalid model (the message names
        the file and the offending key or value).
    """
    p, data = read_toml(path, "model file")
    check_keys(data, _TOP_KEYS, "the top level", str(p))
    model_tab = data.get("model")
    if not isinstance(model_tab, dict):
        raise ConfigError(f"{p}: missing [model] table")
    check_keys(model_tab, _MODEL_KEYS, "[model]", str(p))
    if "means" not in model_tab:
        raise ConfigError(f"{p}: [model] needs 'means'")
    has_shared, has_each = "covariance" in model_tab, "covariances" in model_tab
    if has_shared == has_each:
        raise ConfigError(f"{p}: [model] needs exactly one of 'covariance' or 'covariances'")
    cov = model_tab["covariance"] if has_shared else model_tab["covariances"]
    try:
        model = GaussianQueryModel(
            model_tab["means"],
            cov,
            model_tab.get("pairs"),
            labels=model_tab.get("labels"),
            statistics=model_tab.get("statistics"),
        )
    except DistPrivError as exc:
        raise ConfigError(f"{p}: [model]: {exc}") from exc
    options = data.get("options", {})
    if not isinstance(options, dict) or not all(isinstance(v, dict) for v in options.values()):
        raise ConfigError(f"{p}: [options] must hold one table per mechanism")
    check_keys(options, set(MECHANISMS), "[options]", str(p))
    title = data.get("title", p.stem)
    if not isinstance(title, str):
        raise ConfigError(f"{p}: title must be a string")
    return ModelConfig(model=model, options=options, title=title, path=str(p))
