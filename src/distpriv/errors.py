"""Exceptions and warnings raised by distpriv.

Every error raised on bad user input is a subclass of :class:`DistPrivError` and of
the built-in ``TypeError`` or ``ValueError``, so callers can catch either the library's
base class or the standard one. Messages name the parameter and the offending value.
"""

from __future__ import annotations

__all__ = [
    "AssumptionWarning",
    "BudgetExceededError",
    "CompositionError",
    "ConfigError",
    "DistPrivError",
    "LedgerError",
    "MechanismNotApplicableError",
    "ParameterError",
    "ParameterTypeError",
    "PrivacyLeakWarning",
    "SamplerError",
    "UtilityWarning",
]


class DistPrivError(Exception):
    """Base class of every error raised by distpriv."""


class ParameterError(DistPrivError, ValueError):
    """A parameter has the right type but an invalid value (NaN, out of range, bad shape…)."""


class ParameterTypeError(DistPrivError, TypeError):
    """A parameter has the wrong type."""


class MechanismNotApplicableError(ParameterError):
    """The mechanism cannot give its guarantee for this query model.

    Raised, for example, when the ∞-Wasserstein distance is infinite (Chen & Ohrimenko
    2023, Thm 3.1 needs it finite) or when the noiseless release (Thm 4.4) would not be
    private. The message says which alternative mechanism applies.
    """


class SamplerError(DistPrivError, RuntimeError):
    """The secure noise sampler could not draw (e.g. the OS entropy source failed).

    Nothing is released when this is raised; retrying draws fresh noise.
    """


class ConfigError(ParameterError):
    """A configuration file is malformed or has an unknown or invalid key."""


class LedgerError(DistPrivError, ValueError):
    """A ledger file is missing, corrupt, truncated, foreign or of an unknown schema version.

    The file is never modified when this is raised.
    """


class CompositionError(DistPrivError, ValueError):
    """The releases cannot be composed exactly (mixed noise families, a mechanism whose
    guarantee has no joint form, different statistics' dimensions…).

    Raised instead of composing silently with a bound that does not hold.
    """


class BudgetExceededError(DistPrivError, ValueError):
    """A release would take the composed guarantee past the ledger's (ε, δ) budget.

    Raised before any noise is drawn; nothing is released and nothing is recorded.
    """


class AssumptionWarning(UserWarning):
    """An assumption of the theorem a mechanism implements does not hold for the input.

    The calibrated mechanism still records the failed assumption, and what is known when
    it fails, in its :class:`~distpriv.PrivacyGuarantee`.
    """


class PrivacyLeakWarning(UserWarning):
    """Something about the inputs may defeat the protection a release claims.

    Raised, for example, when the modelling table contains rows of the released table (the
    model, hence the noise scale, then depends on the private data), or when the model rests
    on so few rows per stratum that it describes the table rather than the population.
    """


class UtilityWarning(UserWarning):
    """The release is private but may be useless: e.g. a statistic's noise standard
    deviation exceeds the width of its declared valid range."""
