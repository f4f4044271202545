"""Property-inference attacks, the privacy audit (Chen & Ohrimenko 2023 §5.3) and the
data-level check of δ(ε) on resampled statistics (:func:`verify_on_data`,
:func:`verify_sequential`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach_declared

# The one export list (distpriv.util.lazy.attach_declared): type checkers, which do not
# follow a module __getattr__, read these imports; at run time attach_declared reads them from
# this file and imports each submodule on first use (`distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn).
if TYPE_CHECKING:
    from .audit import (
        AuditAttackResult,
        AuditReport,
        MechanismAudit,
        accuracy_interval,
        audit,
    )
    from .audit_kinds import AuditTarget, EventSampler, MeanSampler, MixtureLikelihoodRatio
    from .audit_pairs import audit_pairs, choose_pairs
    from .audit_pairs_report import PairsAuditReport
    from .audit_report import UNDEFENDED
    from .audit_several import SeveralAuditReport, audit_attributes
    from .bounds import EpsilonBound, accuracy_allowed, clopper_pearson, epsilon_lower_bound
    from .classifiers import CLASSIFIERS, make_classifier
    from .likelihood import GaussianLikelihoodRatio
    from .verify import (
        DataLevelCheck,
        DirectionCheck,
        NullControl,
        detectable_delta,
        verify_on_data,
    )
    from .verify_sequential import look_schedule, verify_sequential

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
