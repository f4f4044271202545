"""The library's release recorded in a ledger: :func:`release_with_ledger`.

:func:`distpriv.release`'s stages (:func:`~.release.prepare_release`, outside the ledger's
lock), then the ledger's locked step (:func:`~distpriv.pipeline.ledger.draw.ledgered_draw`):
the release composed exactly with the earlier ones of the same data, the budget checked, the
noise drawn and the row recorded. The ledger package stores; this command uses it.

Distribution privacy does not compose sequentially (Kifer & Machanavajjhala 2014; Chen &
Ohrimenko 2023, §2): two releases of statistics of the same data are correlated through the
data, so the ledger is what lets the next release be judged together with the earlier ones
(docs/composition.md).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from ...errors import ParameterTypeError
from ...modeling.tables import as_table
from ..ledger import Budget, Ledger, LedgeredRelease, LedgerEntry, PendingRelease, ReleaseAccounts
from ..ledger.accounts import release_identity
from ..ledger.draw import account_of, ledgered_draw, retry_if_created_elsewhere
from ..plan import keyword_plan
from ..report import collect_warnings
from .release import ReleaseReport, prepare_release

__all__ = ["release_with_ledger"]


def release_with_ledger(
    data: Any,
    query: Any,
    secret: Any,
    *,
    model_data: Any,
    mechanism: str,
    epsilon: float,
    delta: float = 0.0,
    ledger: Ledger | str | os.PathLike[str],
    budget: Budget | None = None,
    data_name: str | None = None,
    data_fingerprint: str | None = None,
    subset_size: int | None = None,
    method: str = "analytic",
    n_samples: int = 1000,
    options: Any = None,
    rng: Any = None,
    missing: str = "error",
    population: bool = False,
    beta: float | None = 0.05,
) -> LedgeredRelease:
    """:func:`distpriv.pipeline.release` judged together with the ledger's earlier releases.

    ``population`` and ``beta`` as in :func:`distpriv.pipeline.release` (the confidence on
    the population); declared ranges of the query clamp the released values the same way.

    The modelling and calibration of the new release happen first (outside the lock);
    then, in one ledger transaction (:func:`ledgered_draw`), the earlier releases of the
    same data and secret are composed exactly with this one
    (:func:`distpriv.composition.accountant.compose`), the release is refused if the composed
    guarantee exceeds the budget, and only then is the noise drawn and the row recorded.

    Parameters
    ----------
    data, query, secret, model_data, mechanism, epsilon, delta, subset_size, method,
    n_samples, options, rng, missing
        As for :func:`distpriv.pipeline.release`: ``rng=None`` draws the noise from the
        secure sampler; a seed gives a reproducible simulation that is NOT private.
    ledger : Ledger or path
    budget : Budget, optional
        (ε, δ) for all releases of this data and secret; recorded with the first release,
        and must equal the recorded budget afterwards.
    data_name : str, optional
        A name identifying the released data in the ledger instead of its rows (use it
        when the same data is released with rows that differ, e.g. re-encoded).
    data_fingerprint : str, optional
        The keyed multiset fingerprint of the released rows under ``ledger.identity_key``,
        when the caller computed it (e.g. in the engine); by default it is computed here.

    Raises
    ------
    BudgetExceededError
        Nothing drawn, released or recorded.
    ParameterError
        ``budget`` differs from the recorded one (both named).
    CompositionError
        The earlier releases cannot be composed exactly with this one.
    """
    # lazily: a release refused before its record leaves no new ledger file behind
    led = ledger if isinstance(ledger, Ledger) else Ledger(ledger, lazy=True)
    if budget is not None and not isinstance(budget, Budget):
        raise ParameterTypeError(f"budget must be a Budget, got {budget!r}")
    table = as_table(data)
    plan = keyword_plan(
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        subset_size=table.n_rows if subset_size is None else subset_size,
        method=method,
        n_samples=n_samples,
        options=options,
        missing=missing,
        population=population,
        beta=beta,
    )
    with collect_warnings() as caught:
        prep = prepare_release(table, query, secret, model_data=model_data, plan=plan, rng=rng)
    gen = prep.rng
    if getattr(secret, "is_grid", False):
        # A range or events: the values on the released table's grid, as the model has them
        # (the composition and the record need the hypotheses, not the unmaterialised range).
        secret = secret.grid(table.n_rows)
    model_frame = as_table(model_data).frame
    model_rng = None if gen is None else int(gen.integers(2**63))
    pending = PendingRelease(
        mechanism=prep.mechanism,
        value=prep.value,
        query=prep.query,
        secret=secret,
        model_data=model_frame,
        # The mechanism calibrated (``auto``'s choice), whose model the ledger rebuilds.
        model_spec=replace(plan.model, seed=model_rng).for_mechanism(prep.mechanism.name),
        model=prep.model,
        beta=beta,
        noise_rng=gen,
    )
    given_fp = data_fingerprint

    def attempt() -> tuple[LedgerEntry, Any, Any, Budget | None]:
        meaning, aliases = release_identity(led, table.frame, secret, data_name=data_name)
        accounts = ReleaseAccounts(
            data=account_of(led, table.frame, data_name=data_name, fingerprint=given_fp),
            model=account_of(led, model_frame),
            meanings=meaning,
            aliases=aliases,
        )
        return ledgered_draw(led, pending, accounts, budget=budget)

    def forget_given() -> None:
        # Another process created the ledger first: a fingerprint given under our key does
        # not name the data under theirs; compute it here instead.
        nonlocal given_fp
        given_fp = None

    entry, rel, composed, effective = retry_if_created_elsewhere(attempt, forget_given)
    if prep.query.ranges:  # declared ranges: clamping is post-processing (no privacy cost)
        rel = replace(rel, value=prep.query.clamp(rel.value)[0])
    report = ReleaseReport(
        rel,
        prep.mechanism,
        prep.model,
        prep.value,
        table.n_rows,
        choice=prep.choice,
        warnings=caught.items,
        secret=secret,
        beta=beta,
    )
    out = LedgeredRelease(report=report, entry=entry, composed=composed, budget=effective)
    # report.to_dict() then carries the composed guarantee, as the CLI's JSON does.
    return replace(out, report=replace(report, ledger=out.ledger_summary()))
