"""distpriv.util.records.field_values: a result's fields as a dict, named once.

The reference is :func:`dataclasses.asdict` (which copies recursively; equal on flat values).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from distpriv.util.records import field_values


@dataclass(frozen=True)
class _Result:
    b: float
    a: str
    c: tuple[int, ...] = ()
    d: int = field(default=0, repr=False)

    @property
    def total(self) -> float:
        return self.b + self.d


@given(
    b=st.floats(allow_nan=False),
    a=st.text(max_size=5),
    c=st.tuples(st.integers()),
    d=st.integers(),
)
def test_all_fields_in_declaration_order_like_asdict(b, a, c, d) -> None:
    r = _Result(b, a, c, d)
    got = field_values(r)
    assert got == dataclasses.asdict(r)
    assert list(got) == ["b", "a", "c", "d"]  # declaration order, not sorted
    assert got["c"] is r.c  # the values themselves, not copies


def test_named_fields_and_properties_in_the_order_named() -> None:
    r = _Result(1.5, "x", (1,), 2)
    got = field_values(r, "total a  b\n")
    assert list(got) == ["total", "a", "b"]
    assert got == {"total": 3.5, "a": "x", "b": 1.5}


def test_a_misspelt_name_is_an_error_not_a_missing_key() -> None:
    with pytest.raises(AttributeError, match="tottal"):
        field_values(_Result(1.0, "x"), "a tottal")


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("distpriv.guarantees", "Assumption"),
        ("distpriv.accounting.pair_profile", "GaussianPairProfile"),
        ("distpriv.modeling.lattice", "Lattice"),
        ("distpriv.local.utility", "AttackResult"),
        ("distpriv.local.montecarlo", "DistPEstimate"),
    ],
)
def test_results_that_report_every_field_do(module: str, name: str) -> None:
    """A field added to one of these results reaches its ``to_dict`` (and so the reports)."""
    import importlib

    cls = getattr(importlib.import_module(module), name)
    obj = object.__new__(cls)
    for f in dataclasses.fields(cls):
        object.__setattr__(obj, f.name, 0.25)
    assert list(obj.to_dict()) == [f.name for f in dataclasses.fields(cls)]
