"""The config's ``[secret] kind = "several"``: several proportion secrets in one release.

Layout (Zhang, Ohrimenko & Cummings 2022, §3: a set C of sensitive attributes)::

    [secret]
    kind = "several"

    [[secret.attributes]]                 # one table per attribute, at least two
    predicate = "sex = 'Female'"
    values = [0.3, 0.4]                   # and optionally pairs = [[...]] or within = k

    [[secret.attributes]]
    predicate = "income = '>50K'"
    values = [0.2, 0.3]

Each attribute table takes exactly the keys of a proportion secret. Checked here when the
file is loaded, with one-line errors naming ``[secret] attributes[k]`` and the key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ConfigError

__all__ = ["ATTRIBUTE_KEYS", "check_several_table"]

# The keys of one [[secret.attributes]] table (those of a proportion secret).
ATTRIBUTE_KEYS = frozenset({"predicate", "values", "pairs", "within"})


def check_several_table(
    sec: dict[str, Any],
    subset_size: Any,
    where: str,
    check_grid: Callable[[Any, Any, str], None],
) -> None:
    """Validate ``[secret] attributes`` of a ``kind = "several"`` secret.

    Parameters
    ----------
    sec : dict
        The ``[secret]`` table (its own keys already checked).
    subset_size : object
        ``[model] subset_size``, for each attribute's grid check.
    where : str
        The config file, for the messages.
    check_grid : callable
        The proportion secret's grid check (values × subset_size whole numbers of rows).

    Raises
    ------
    ConfigError
        Not a list of tables, fewer than two attributes, an attribute with an unknown or
        missing key or a ``kind`` (no nesting), a predicate given twice.
    """
    attrs = sec.get("attributes")
    if not isinstance(attrs, list) or not all(isinstance(a, dict) for a in attrs):
        raise ConfigError(
            f"{where}: [secret] attributes must be an array of tables ([[secret.attributes]] "
            f"with predicate and values), got {attrs!r}"
        )
    if len(attrs) < 2:
        raise ConfigError(
            f"{where}: [secret] attributes must list at least two attributes, got "
            f'{len(attrs)}; for one attribute use kind = "proportion" with its predicate '
            "and values"
        )
    seen: dict[str, int] = {}
    for k, attr in enumerate(attrs):
        at = f"{where}: [secret] attributes[{k}]"
        if "kind" in attr or "attributes" in attr:
            raise ConfigError(
                f"{at}: an attribute is a proportion secret (predicate, values, pairs or "
                f"within); kind {attr.get('kind', 'several')!r} cannot be nested in "
                'kind = "several"'
            )
        for key in sorted(set(attr) - ATTRIBUTE_KEYS):
            raise ConfigError(
                f"{at}: unknown key {key!r} (allowed: {', '.join(sorted(ATTRIBUTE_KEYS))})"
            )
        for key in ("predicate", "values"):
            if key not in attr:
                raise ConfigError(f"{at} needs {key!r}")
        pred = attr["predicate"]
        if not isinstance(pred, str) or not pred.strip():
            raise ConfigError(f"{at}: predicate must be a non-empty SQL string, got {pred!r}")
        norm = " ".join(pred.split())
        if norm in seen:
            raise ConfigError(
                f"{at}: predicate {pred!r} is already attributes[{seen[norm]}]'s; give each "
                "attribute once (its values and pairs together)"
            )
        seen[norm] = k
        check_grid(attr["values"], subset_size, f"{where}: [secret] attributes[{k}]")
