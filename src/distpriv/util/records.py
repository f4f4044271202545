"""Frozen dataclass results as dicts, without restating every field.

Why: a result's ``to_dict`` used to spell out ``"name": self.name`` for each field, so a field
added to the class and forgotten in the dict silently left the reports, and every result
class repeated the same lines. :func:`field_values` names the fields once.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["field_values"]


def field_values(record: Any, names: str | None = None) -> dict[str, Any]:
    """``{name: record.name}`` for the named attributes of ``record``, in the order named.

    Parameters
    ----------
    record : dataclass instance
        The result to read.
    names : str or None
        Attribute names separated by spaces (fields or properties), as in
        :func:`collections.namedtuple`; ``None`` for every dataclass field in declaration
        order.

    Returns
    -------
    dict of str to object
        The values as they are (no copying, no conversion: wrap in
        :func:`distpriv.guarantees.to_jsonable` for JSON).

    Raises
    ------
    AttributeError
        When ``record`` has no attribute of a given name (a typo in ``names``).
    """
    keys = [f.name for f in dataclasses.fields(record)] if names is None else names.split()
    return {key: getattr(record, key) for key in keys}
