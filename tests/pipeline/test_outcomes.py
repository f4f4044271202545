"""The commands' outcomes: one declaration of the ``report`` field, the same fields as before.

A caller builds and unpacks outcomes by field name and position, so the shared base that
declares ``report`` once must leave every outcome's fields, their order and defaults as
they were, and its display must still hide the private part.
"""

from __future__ import annotations

import dataclasses

import pytest

from distpriv.pipeline.outcomes import (
    AuditOutcome,
    CalibrateOutcome,
    DemoOutcome,
    ReleaseOutcome,
    VerifyOutcome,
)


@pytest.mark.parametrize("cls", [ReleaseOutcome, AuditOutcome, DemoOutcome, VerifyOutcome])
def test_report_outcomes_keep_their_fields_in_order(cls: type) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    assert names == ["public", "private", "warnings", "report"]
    out = cls({"kind": "x"}, {"secret": 1}, ("w",), "the report")
    assert out.report == "the report"
    assert cls({"kind": "x"}).report is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.report = None  # type: ignore[misc]
    text = repr(out)
    assert text.startswith(f"{cls.__name__}(kind='x'") and "secret" not in text


def test_calibrate_outcome_carries_a_mechanism_not_a_report() -> None:
    names = [f.name for f in dataclasses.fields(CalibrateOutcome)]
    assert names == ["public", "private", "warnings", "mechanism"]
