"""Frozen results of the pipeline's commands: what may be published, and what may not."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["AuditOutcome", "CalibrateOutcome", "DemoOutcome", "ReleaseOutcome"]


@dataclass(frozen=True)
class _Outcome:
    """``public``: the report that may be published (JSON-safe). ``private``: the curator's
    diagnostics (JSON-safe, marked private; empty when there are none). ``warnings``: the
    warnings raised on the way, as one-line strings (also re-emitted as warnings)."""

    public: dict[str, Any]
    private: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReleaseOutcome(_Outcome):
    """Result of :func:`distpriv.pipeline.run_release`.

    ``report`` is the in-memory :class:`~distpriv.pipeline.ReleaseReport` (release,
    mechanism, model, true value) for callers that need the objects.
    """

    report: Any = None


@dataclass(frozen=True)
class AuditOutcome(_Outcome):
    """Result of :func:`distpriv.pipeline.run_audit`; ``report`` is the AuditReport."""

    report: Any = None


@dataclass(frozen=True)
class DemoOutcome(_Outcome):
    """Result of :func:`distpriv.pipeline.run_demo`; ``report`` is the DemoReport."""

    report: Any = None


@dataclass(frozen=True)
class CalibrateOutcome(_Outcome):
    """Result of :func:`distpriv.pipeline.run_calibrate`; ``mechanism`` is calibrated."""

    mechanism: Any = None
