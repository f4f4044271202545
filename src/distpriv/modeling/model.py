"""From a table to a query model: f_θ for each value of the secret (Chen & Ohrimenko App. C.1).

For a :class:`ProportionSecret` with value p and datasets of n rows, θ_p is the
distribution of a dataset made of round(p·n) rows drawn without replacement from the rows
satisfying the predicate (stratum A) and n − round(p·n) from the others (stratum B). The
query model is f_θ = law of F(dataset) under θ, as Monte Carlo samples or, for linear
statistics, through its exact mean and covariance.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..moment_uncertainty import BootstrapUncertainty, MomentUncertainty
from ..util.validation import check_choice, check_positive_int, check_rng
from .bootstrap import DEFAULT_BOOTSTRAP, bootstrap_draws, check_bootstrap
from .data_model import DataQueryModel, ModelDesign, _as_query, _facts_thunk
from .model_diagnostics import _diagnostics, _warn_non_gaussian
from .moments import iid_cumulants, row_kurtosis, sum_cumulants, table_moments
from .queries import Query, _row_tree
from .resampling import monte_carlo
from .secrets import ProportionSecret, Secret
from .shape_moments import (
    MAX_STATISTICS,
    shape_correlation_from_rows,
    shape_correlation_of_stratum,
)
from .tables import as_table, check_missing_policy

__all__ = ["DataQueryModel", "model_query", "stratum_moments"]

METHODS = ("montecarlo", "analytic")


def stratum_moments(features: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact mean and covariance of the sum of k rows drawn without replacement.

    With N rows of population mean μ and population covariance Σ (divisor N),
    E[Σ xᵣ] = kμ and Cov[Σ xᵣ] = k (N − k)/(N − 1) Σ (finite-population correction).

    Parameters
    ----------
    features : ndarray, shape (N, m)
    k : int, 0 ≤ k ≤ N

    Returns
    -------
    (ndarray (m,), ndarray (m, m))
    """
    n_rows = features.shape[0]
    mu = features.mean(axis=0)
    centred = features - mu
    pop_cov = centred.T @ centred / n_rows
    fpc = (n_rows - k) / (n_rows - 1) if n_rows > 1 else 0.0
    return k * mu, k * fpc * pop_cov


def model_query(
    data: Any,
    query: Query | Mapping[str, str] | Sequence[str],
    secret: Secret,
    *,
    subset_size: int,
    method: str = "analytic",
    n_samples: int = 1000,
    rng: np.random.Generator | int | None = None,
    pool_size: int | None = None,
    missing: str = "error",
    population: bool = False,
    bootstrap: int | None = DEFAULT_BOOTSTRAP,
) -> DataQueryModel:
    """Model f_θ of a query for each value of the secret, from a table.

    Chen & Ohrimenko 2023, §5.1 and App. C.1: for each value p, datasets of
    ``subset_size`` rows with exactly round(p·n) rows satisfying the predicate, drawn
    without replacement from the two strata.

    Parameters
    ----------
    data : pandas.DataFrame, pyarrow.Table, str/Path to a CSV or Parquet file, DuckDB
        relation, Spark DataFrame (the ``spark`` extra) or Table
        The modelling data (public or auxiliary, not the data to be released).
    query : Query or mapping of name → SQL aggregate
    secret : ProportionSecret or SeveralSecrets
        A :class:`~distpriv.modeling.secret_several.SeveralSecrets` is modelled one
        attribute at a time, each conditional on its own secret only
        (:func:`~distpriv.modeling.model_several.several_model`).
    subset_size : int
        n, the number of rows of a protected dataset.
    method : {"analytic", "montecarlo"}
        ``"analytic"`` (default, as for :func:`distpriv.release` and the CLI; linear
        statistics only, other statistics need ``method="montecarlo"`` and the error says
        so): the exact mean and covariance under this sampling (:func:`stratum_moments`),
        with no Monte Carlo error, computed where the data is
        (:func:`distpriv.modeling.moments.table_moments`: counts, sums and cross-product
        sums per stratum, in one aggregate query or, for many statistics, statements of
        bounded size or rows streamed into BLAS) — a Parquet/CSV file or Spark DataFrame
        of any size is never loaded into memory. The non-Gaussianity diagnostics use the
        exact third and fourth cumulants of the same sampling; ``n_samples`` and ``rng``
        are not used.
        ``"montecarlo"`` (the paper's; pass ``rng`` for a reproducible model):
        ``n_samples`` datasets per θ, drawn as index arrays in chunks of about 2²⁰ row
        indices, with the sample mean and covariance accumulated chunk by chunk
        (:func:`distpriv.modeling.resampling.monte_carlo`). Linear statistics are summed
        from per-row features in numpy; other SQL aggregates are evaluated by one grouped
        DuckDB query per chunk; a Python callable is called per dataset.
    n_samples : int
        Datasets per θ (≥ 2).
    rng : int, numpy.random.Generator or None
    pool_size : int, optional
        ``method="montecarlo"`` only: draw the datasets from a uniform pool of this many
        rows per stratum (drawn once, ≥ ``subset_size``) instead of the whole table, for
        tables too large to featurise whole. Approximate: the model's ``sampling`` says so
        (:mod:`distpriv.modeling.resampling`). Draws are always made in chunks, so memory
        does not grow with ``n_samples`` beyond the (n_samples, m) samples themselves.
    missing : {"error", "drop"}
        NULL/NaN in a column a statistic or the secret predicate uses: ``"error"``
        (default) raises naming the column and the count; ``"drop"`` leaves those rows
        out of the modelling data and reports how many in
        ``diagnostics["missing"]["rows_dropped"]``.
    population : bool
        ``False`` (default): the modelling table is a *sample* of the population the
        protected datasets come from. A dataset's rows are then modelled as drawn i.i.d.
        from each stratum of that population (no finite-population correction against the
        table: it would understate the variance of real datasets), and the model carries
        the sampling uncertainty of its moments (``model.uncertainty``, a
        :class:`~distpriv.MomentUncertainty`, for linear statistics), which the default
        calibration covers with confidence 1 − β. ``True``: the table *is*
        the whole population (e.g. a census; the paper's modelling split in the
        reproductions): datasets are drawn without replacement from it, with the
        finite-population correction, and the moments are taken as exact.
    bootstrap : int or None
        Statistics that are not linear (medians, quantiles, other SQL aggregates, a
        callable such as :meth:`Query.logistic_regression`), ``method="montecarlo"``,
        ``population=False``: the number B of resamples of the stratified bootstrap of
        the modelling table that gives the model its population layer
        (:mod:`distpriv.modeling.bootstrap`; ``model.uncertainty`` is then a
        :class:`~distpriv.BootstrapUncertainty`, covered with confidence 1 − β by the
        default calibration as the linear layer is). Default 50, at least 20; it costs B
        more Monte Carlo models of ``n_samples`` draws per value, drawn from ``rng``.
        ``None``: no population layer (the premise says the uncertainty is not
        quantified). Not used for linear statistics (their layer is in closed form).

    Returns
    -------
    DataQueryModel
        A Gaussian query model (labels = the secret's values, pairs = its pairs) with
        samples and diagnostics.

    Warns
    -----
    AssumptionWarning
        When a statistic's skewness or excess kurtosis under some θ is more than five
        standard errors from 0 (f_θ visibly non-Gaussian). Unequal covariances within a
        pair are reported by :func:`distpriv.calibrate`, with the weaker guarantee that
        still holds (Chen & Ohrimenko 2023, Thm 4.6).

    Raises
    ------
    ParameterError
        Unknown column or invalid SQL (naming the statistic), a predicate no row (or every
        row) satisfies, ``subset_size`` larger than a stratum needs, NULL/NaN in a
        used column (unless ``missing="drop"``), ``method="analytic"`` with a non-linear
        statistic, empty table, a table too large for the in-memory (Monte Carlo) path.
    """
    q = _as_query(query)
    meth = check_choice(method, "method", METHODS)
    draws_n = check_positive_int(n_samples, "n_samples", minimum=2)
    policy = check_missing_policy(missing)
    gen = check_rng(rng)
    boot = check_bootstrap(bootstrap)
    if not isinstance(population, bool):
        raise ParameterTypeError(f"population must be true or false, got {population!r}")
    if meth == "analytic" and not q.is_linear:
        bad = next(s for s in q.statistics if not s.linear)
        raise ParameterError(
            f"method='analytic' needs linear statistics (sum, count, count_if, avg of a row "
            f"expression); statistic {bad.name!r} ({bad.expression}) is not: use "
            "method='montecarlo'"
        )
    if pool_size is not None and meth != "montecarlo":
        raise ParameterError(f"pool_size={pool_size!r} applies only to method='montecarlo'")
    from .secret_events import EventSecret
    from .secret_mean import MeanSecret
    from .secret_several import SeveralSecrets

    # The options a mean secret's builders take (model_mean, model_mean_events: neither
    # takes a row pool or a bootstrap).
    mean_options: dict[str, Any] = {
        "subset_size": subset_size,
        "method": meth,
        "missing": policy,
        "population": population,
        "n_samples": draws_n,
        "rng": gen,
    }

    if isinstance(secret, MeanSecret):
        # Mean secrets: the law given the dataset's mean (modeling/model_mean.py).
        from .model_mean import mean_model

        mtable = as_table(data)
        q.check_columns(mtable)
        secret.parsed.check_columns(mtable.columns)
        return mean_model(mtable, q, secret, **mean_options)
    if isinstance(secret, EventSecret) and not isinstance(secret.source, ProportionSecret):
        # Mean events: a mean secret's model at each event's grid values.
        from .model_mean_events import mean_event_model

        return mean_event_model(as_table(data), q, secret, **mean_options)
    if isinstance(secret, SeveralSecrets):  # several attributes at once: one block each
        from .model_several import several_model

        # Each attribute's proportion model with this call's options (the helper handles
        # missing values once for all of them).
        build = functools.partial(
            model_query,
            subset_size=subset_size,
            method=meth,
            n_samples=draws_n,
            rng=gen,
            pool_size=pool_size,
            population=population,
        )
        return several_model(
            data, q, secret, build=build, method=meth, missing=policy, population=population
        )
    if isinstance(secret, ProportionSecret | EventSecret) and secret.is_grid:
        # A range or events: the values are the grid of this subset size.
        secret = secret.grid(check_positive_int(subset_size, "subset_size"))
    if isinstance(secret, EventSecret) and isinstance(secret.base, ProportionSecret):
        pass  # a proportion's events: modelled value by value, as the proportion itself
    elif not isinstance(secret, ProportionSecret):
        raise ParameterTypeError(
            "secret must be a distpriv secret (ProportionSecret, EventSecret, MeanSecret, "
            f"SeveralSecrets), got "
            f"{type(secret).__name__}"
        )
    # An EventSecret offers what the builders read (parsed, counts, values, pairs).
    vsecret = cast(ProportionSecret, secret)
    table = as_table(data)
    q.check_columns(table)
    vsecret.parsed.check_columns(table.columns)
    if meth == "analytic":
        return _analytic_model(table, q, vsecret, subset_size, policy, population)

    table, missing_report = table.complete(
        q.columns | vsecret.columns, missing=policy, what="modelling data"
    )
    # Non-linear statistics of a sample with the bootstrap layer: the fitted draws are made
    # with the members' common positions (modeling/bootstrap.py), so monte_carlo only sets
    # up the sampler (and its pool) here, with the fewest draws it accepts.
    common = not population and boot is not None and not q.is_linear
    mc = monte_carlo(
        table,
        q,
        vsecret,
        subset_size=subset_size,
        n_samples=2 if common else draws_n,
        rng=gen,
        pool_size=pool_size,
        replace=not population,
    )
    sampler, resampling = mc.sampler, mc.resampling
    n, counts = sampler.n, sampler.counts
    samples, means, covs = mc.samples, mc.means, mc.covariances
    pairs_idx = tuple((vsecret.values.index(a), vsecret.values.index(b)) for a, b in vsecret.pairs)
    uncertainty: MomentUncertainty | BootstrapUncertainty | None = None
    if common and boot is not None:
        both = bootstrap_draws(sampler, pairs_idx, draws=draws_n, resamples=boot, rng=gen)
        samples, uncertainty = both.samples, both.uncertainty
        means = np.stack([s.mean(axis=0) for s in samples])
        covs = np.stack([np.atleast_2d(np.cov(s, rowvar=False, ddof=1)) for s in samples])
    diag_draws = list(samples)
    source = "" if resampling.method == "full" else f", drawn from a row pool ({resampling.note})"
    how = (
        "without replacement from the table (declared the whole population)"
        if population
        else "i.i.d. from the strata of the table (a sample of the population)"
    )
    crn = ", common random numbers across the values" if common else ""
    fitted = (
        f"sample mean and covariance of {draws_n} Monte Carlo datasets of "
        f"{n} rows per value, drawn {how}{source}{crn} (Chen & Ohrimenko 2023, App. C.1)"
    )
    if not population and sampler.features is not None:
        uncertainty = _feature_uncertainty(sampler)
    diagnostics = _diagnostics(means, covs, diag_draws, pairs_idx)
    diagnostics["missing"] = missing_report.to_dict()
    _warn_non_gaussian(diagnostics, vsecret.values, q.names)
    return DataQueryModel(
        means,
        covs,
        secret=vsecret,
        query=q,
        design=ModelDesign(
            method=meth,
            subset_size=n,
            counts=counts,
            stratum_sizes=(
                resampling.stratum_sizes
                if resampling is not None
                else (int(sampler.rows_a.size), int(sampler.rows_b.size))
            ),
            population=population,
            sampling=resampling,
        ),
        samples=samples,
        diagnostics=diagnostics,
        fitted=fitted,
        uncertainty=uncertainty,
        facts=_facts_thunk(table, q, n, policy),
    )


def _feature_uncertainty(sampler: Any) -> MomentUncertainty:
    """The moments' uncertainty of a Monte Carlo model of linear statistics, from the
    per-row features of the two strata (the draws themselves add only Monte Carlo error)."""
    scale = sampler.scale
    covs, kurts, sizes = [], [], []
    for rows in (sampler.rows_a, sampler.rows_b):
        x = sampler.features[rows] * scale
        c = x - x.mean(axis=0)
        var = np.mean(c**2, axis=0)
        ok = var > 0
        kurts.append(np.where(ok, np.mean(c**4, axis=0) / np.where(ok, var, 1.0) ** 2, 0.0))
        covs.append(c.T @ c / max(rows.size - 1, 1))
        sizes.append(int(rows.size))
    weights = [(k, sampler.n - k) for k in sampler.counts]
    # Third and fourth cross moments: the tight set's correlations (population/_corr.py).
    shape = None
    if sampler.features.shape[1] <= MAX_STATISTICS:
        shape = np.stack(
            [
                shape_correlation_from_rows(sampler.features[r])
                for r in (sampler.rows_a, sampler.rows_b)
            ]
        )
    return MomentUncertainty(
        sizes,
        weights,
        np.stack(covs),
        np.stack(kurts),
        method=_UNCERTAINTY_METHOD,
        shape_correlation=shape,
    )


_UNCERTAINTY_METHOD = (
    "asymptotic (central limit) laws of the per-stratum row mean and covariance of the "
    "modelling table, from the strata sizes"
)


def _stacked(parts: list[np.ndarray | None]) -> np.ndarray | None:
    """The strata's shape correlations stacked, or ``None`` if one is missing."""
    if any(p is None for p in parts):
        return None
    return np.stack([p for p in parts if p is not None])


def _analytic_model(
    table: Any,
    q: Query,
    secret: ProportionSecret,
    subset_size: int,
    missing: str,
    population: bool = True,
) -> DataQueryModel:
    """The analytic branch of :func:`model_query`: moments from one engine aggregate."""
    n = check_positive_int(subset_size, "subset_size")
    tm = table_moments(
        table,
        [_row_tree(s) for s in q.statistics],
        secret.parsed,
        names=list(q.names),
        missing=missing,
    )
    counts = secret.counts(n)
    for p, k in zip(secret.values, counts, strict=True):
        for need, have, side in ((k, tm.a.count, ""), (n - k, tm.b.count, "not ")):
            if need > have:
                raise ParameterError(
                    f"subset_size={n} with p={p} needs {need} rows {side}satisfying the "
                    f"predicate; the table has {have}"
                )
    scale = np.array([1.0 / n if s.scale == "mean" else 1.0 for s in q.statistics])
    means: list[np.ndarray] = []
    covs: list[np.ndarray] = []
    skews: list[np.ndarray] = []
    kurts: list[np.ndarray] = []
    cumulants = sum_cumulants if population else iid_cumulants
    for k in counts:
        ma, ca, k3a, k4a = cumulants(tm.a, k)
        mb, cb, k3b, k4b = cumulants(tm.b, n - k)
        cov = ca + cb
        means.append((ma + mb) * scale)
        covs.append(cov * np.outer(scale, scale))
        var = np.diag(cov)
        ok = var > 1e-24 * np.maximum(np.abs(ma + mb), 1.0) ** 2
        safe = np.where(ok, var, 1.0)
        skews.append(np.where(ok, (k3a + k3b) / safe**1.5, 0.0))
        kurts.append(np.where(ok, (k4a + k4b) / safe**2, 0.0))
    mean_arr, cov_arr = np.stack(means), np.stack(covs)
    pairs_idx = tuple((secret.values.index(a), secret.values.index(b)) for a, b in secret.pairs)
    diagnostics = _diagnostics(
        mean_arr, cov_arr, None, pairs_idx, shape=(np.stack(skews), np.stack(kurts))
    )
    diagnostics["missing"] = tm.missing.to_dict()
    diagnostics["engine"] = table.dialect
    _warn_non_gaussian(diagnostics, secret.values, q.names)
    uncertainty = None
    if not population:
        outer = np.outer(scale, scale)
        uncertainty = MomentUncertainty(
            (tm.a.count, tm.b.count),
            [(k, n - k) for k in counts],
            np.stack([st.cross / (st.count - 1) * outer for st in (tm.a, tm.b)]),
            np.stack([row_kurtosis(st) for st in (tm.a, tm.b)]),
            method=_UNCERTAINTY_METHOD,
            # Third and fourth cross moments (one more aggregate): the tight set's
            # correlations (population/_corr.py).
            shape_correlation=_stacked([shape_correlation_of_stratum(st) for st in (tm.a, tm.b)]),
        )
    how = (
        "without replacement from the two strata of the table (declared the whole "
        "population: finite-population correction)"
        if population
        else "i.i.d. from the population strata the table samples (no finite-population "
        "correction; moments estimated from the table)"
    )
    return DataQueryModel(
        mean_arr,
        cov_arr,
        secret=secret,
        query=q,
        design=ModelDesign(
            method="analytic",
            subset_size=n,
            counts=counts,
            stratum_sizes=(tm.a.count, tm.b.count),
            population=population,
        ),
        samples=None,
        diagnostics=diagnostics,
        fitted=(
            f"exact mean and covariance of the statistics of {n}-row datasets drawn "
            f"{how} (Gaussian shape assumed), from {tm.how}"
        ),
        uncertainty=uncertainty,
        facts=_facts_thunk(table, q, n, missing),
    )
