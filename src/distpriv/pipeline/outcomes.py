"""Frozen results of the pipeline's commands: what may be published, and what may not.

An outcome shows only its public part when displayed (``repr``, and ``_repr_html_`` in a
notebook), so a shared notebook does not leak the curator's diagnostics by displaying a
result; :meth:`_Outcome.private_view` shows those on request, marked PRIVATE.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AuditOutcome",
    "CalibrateOutcome",
    "DemoOutcome",
    "PrivateView",
    "ReleaseOutcome",
    "VerifyOutcome",
]


@dataclass(frozen=True)
class PrivateView:
    """The curator's private diagnostics of an outcome, displayed in a PRIVATE frame."""

    private: dict[str, Any]

    def __repr__(self) -> str:
        body = json.dumps(self.private, indent=1, default=str)
        return f"PRIVATE — never publish or share this output\n{body}"

    def _repr_html_(self) -> str:
        from ..util.templates import repr_private

        return repr_private(self.private)


@dataclass(frozen=True, repr=False)
class _Outcome:
    """``public``: the report that may be published (JSON-safe). ``private``: the curator's
    diagnostics (JSON-safe, marked private; empty when there are none). ``warnings``: the
    warnings raised on the way, as one-line strings (also re-emitted as warnings)."""

    public: dict[str, Any]
    private: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def __repr__(self) -> str:
        # Never the private part: displaying an outcome must be safe to share.
        kind = self.public.get("kind", "report") if isinstance(self.public, dict) else "report"
        hidden = " (private diagnostics hidden: .private_view())" if self.private else ""
        return f"{type(self).__name__}(kind={kind!r}, public=<{len(self.public)} keys>{hidden})"

    def _repr_html_(self) -> str:
        """The public report as compact HTML (for notebooks); never the private part."""
        from ..util.templates import repr_report

        return repr_report(self.public, private_hidden=bool(self.private))

    def private_view(self) -> PrivateView:
        """The curator's diagnostics, for display on request (marked PRIVATE)."""
        return PrivateView(self.private)


@dataclass(frozen=True, repr=False)
class _ReportOutcome(_Outcome):
    """An outcome that also carries the command's in-memory report object."""

    #: The command's in-memory result object, for callers that need the objects (what may
    #: be published is ``public``).
    report: Any = None


@dataclass(frozen=True, repr=False)
class ReleaseOutcome(_ReportOutcome):
    """Result of :func:`distpriv.pipeline.run_release`.

    ``report`` is the in-memory :class:`~distpriv.pipeline.ReleaseReport` (release,
    mechanism, model, true value) for callers that need the objects.
    """


@dataclass(frozen=True, repr=False)
class AuditOutcome(_ReportOutcome):
    """Result of :func:`distpriv.pipeline.run_audit`; ``report`` is the AuditReport."""


@dataclass(frozen=True, repr=False)
class DemoOutcome(_ReportOutcome):
    """Result of :func:`distpriv.pipeline.run_demo`; ``report`` is the DemoReport."""


@dataclass(frozen=True, repr=False)
class CalibrateOutcome(_Outcome):
    """Result of :func:`distpriv.pipeline.run_calibrate`; ``mechanism`` is calibrated."""

    mechanism: Any = None


@dataclass(frozen=True, repr=False)
class VerifyOutcome(_ReportOutcome):
    """Result of :func:`distpriv.pipeline.run_verify`; ``report`` is the DataLevelCheck."""
