"""Monte Carlo query models in bounded memory: chunked draws, streamed moments, row pools.

The Monte Carlo model of Chen & Ohrimenko 2023, App. C.1 draws ``n_samples`` datasets of n
rows per value of the secret and takes the sample mean and covariance of F. Here the draws
are made in chunks (:meth:`StratifiedSampler.draw_chunks`): row indices per stratum, summed
features or one grouped query per chunk, and the moments are accumulated chunk by chunk
(:class:`MomentAccumulator`), so peak memory is O(chunk · n) plus the (n_samples, m) draws
kept for the Wasserstein mechanisms — it does not grow with n·n_samples.

Tables larger than memory. With ``pool_size`` the draws come from a *pool*: a uniform
sample, without replacement, of ``pool_size`` rows from each stratum, drawn once (only the
pool's rows are materialised and featurised). Each dataset drawn from the pool is, on its
own, exactly a uniform draw from the stratum (a uniform subset of a uniform subset is
uniform), but the datasets share the pool, so the estimated moments carry an extra error
of relative order 1/pool_size besides the Monte Carlo error; the model records
``sampling = "pool"`` and the pool sizes. Per-stratum sampling inside the engine (exact,
no pool) is not implemented.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..util.validation import check_positive_int, check_rng
from . import tables
from .queries import Query
from .sampling import sample_subsets
from .secrets import ProportionSecret
from .strata import StratifiedSampler
from .tables import Table, as_table

__all__ = ["MomentAccumulator", "MonteCarloDraws", "Resampling", "draw_pool", "monte_carlo"]


class MomentAccumulator:
    """Running mean and covariance of row vectors, merged chunk by chunk.

    Chan, Golub & LeVeque (1979)'s pairwise update: with (n_a, mean_a, M_a) and a chunk
    (n_b, mean_b, M_b), M being the sum of outer products of deviations,
    M = M_a + M_b + (mean_b − mean_a)(mean_b − mean_a)ᵀ · n_a n_b / (n_a + n_b). Each chunk
    is centred on its own mean first, so large offsets do not cancel catastrophically.

    Parameters
    ----------
    dim : int
        m, the length of each vector.
    """

    def __init__(self, dim: int) -> None:
        self.count = 0
        self.mean = np.zeros(dim)
        self._comoment = np.zeros((dim, dim))

    def update(self, block: np.ndarray) -> None:
        """Add the rows of ``block`` (shape (c, m))."""
        c = block.shape[0]
        if c == 0:
            return
        mean_b = block.mean(axis=0)
        centred = block - mean_b
        total = self.count + c
        diff = mean_b - self.mean
        self._comoment += centred.T @ centred + np.outer(diff, diff) * (self.count * c / total)
        self.mean = self.mean + diff * (c / total)
        self.count = total

    def covariance(self, ddof: int = 1) -> np.ndarray:
        """Sample covariance, shape (m, m), divisor count − ddof."""
        if self.count <= ddof:
            raise ParameterError(
                f"a covariance with ddof={ddof} needs more than {ddof} vectors, got {self.count}"
            )
        return self._comoment / (self.count - ddof)


@dataclass(frozen=True)
class Resampling:
    """How a Monte Carlo query model drew its datasets (reported in the model's ``to_dict``)."""

    #: {"full", "pool"}
    #: ``"full"``: every dataset drawn from the whole strata (exact sampling of θ).
    #: ``"pool"``: from a uniform pool of rows per stratum drawn once (approximate, see
    #: the module notes).
    method: str
    #: (N_A, N_B) in the table.
    stratum_sizes: tuple[int, int]
    #: Rows requested per stratum in the pool.
    pool_size: int | None
    #: Rows actually in the pool per stratum (a stratum smaller than ``pool_size`` is
    #: kept whole).
    pool_strata_sizes: tuple[int, int] | None
    #: Datasets drawn per chunk.
    chunk_subsets: int

    @property
    def exact(self) -> bool:
        """Whether each dataset is drawn from the whole strata (pools kept whole count)."""
        return self.method == "full" or self.pool_strata_sizes == self.stratum_sizes

    @property
    def note(self) -> str:
        """One sentence for reports."""
        pool = self.pool_strata_sizes  # None exactly for method "full"
        if self.method == "full" or pool is None:
            return "datasets drawn without replacement from the whole strata (exact sampling)"
        if self.exact:
            return "pool holds every row of both strata: the same as full sampling"
        return (
            f"datasets drawn from a uniform pool of {pool[0]} + "
            f"{pool[1]} rows of the strata ({self.stratum_sizes[0]} + "
            f"{self.stratum_sizes[1]}); each dataset is uniform over the strata, but they "
            "share the pool, so the moments approximate f_theta with an extra error of "
            "relative order 1/pool_size"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description."""
        return {
            "sampling": self.method,
            "exact": self.exact,
            "stratum_sizes": list(self.stratum_sizes),
            "pool_size": self.pool_size,
            "pool_strata_sizes": (
                None if self.pool_strata_sizes is None else list(self.pool_strata_sizes)
            ),
            "chunk_subsets": self.chunk_subsets,
            "note": self.note,
        }


@dataclass(frozen=True)
class MonteCarloDraws:
    """Draws of F per value of the secret and their moments."""

    #: tuple of ndarray, shape (n_samples, m) each
    samples: tuple[np.ndarray, ...]
    #: ndarray, shape (values, m)
    means: np.ndarray
    #: ndarray, shape (values, m, m)
    #: Sample covariances (divisor n_samples − 1).
    covariances: np.ndarray
    #: The sampler used (over the pool when ``resampling.method == "pool"``).
    sampler: StratifiedSampler
    resampling: Resampling


def draw_pool(
    table: Table, secret: ProportionSecret, *, pool_size: int, rng: np.random.Generator
) -> tuple[Table, tuple[int, int], tuple[int, int]]:
    """A table of ``pool_size`` uniformly drawn rows per stratum of the secret's predicate.

    Returns
    -------
    (Table, (N_A, N_B), (P_A, P_B))
        The pool, the strata sizes in ``table`` and in the pool; P = min(pool_size, N).
    """
    what = f"secret predicate ({secret.predicate})"
    if table.n_rows > tables.MAX_IN_MEMORY_ROWS:
        # Larger than memory: each stratum's pool is a reservoir sample drawn in the engine.
        with_p, n_with = table.sample_where(secret.predicate, pool_size, rng, what)
        without, n_without = table.sample_where(secret.predicate, pool_size, rng, what, negate=True)
        import pandas as pd  # the pool's rows came from the engine as frames

        frame = pd.concat([with_p, without], ignore_index=True)
        pool = Table(frame, f"pool of {table.source}")
        return pool, (n_with, n_without), (len(with_p), len(without))
    mask = table.predicate(secret.predicate, what)
    picked = []
    for rows in (np.flatnonzero(mask), np.flatnonzero(~mask)):
        take = min(pool_size, rows.size)
        picked.append(rows[np.sort(sample_subsets(rows.size, take, 1, rng, ordered=False)[0])])
    pool = Table(table.subset_frame(np.concatenate(picked)), f"pool of {table.source}")
    sizes = (int(mask.sum()), int(mask.size - mask.sum()))
    return pool, sizes, (picked[0].size, picked[1].size)


def monte_carlo(
    data: Any,
    query: Query,
    secret: ProportionSecret,
    *,
    subset_size: int,
    n_samples: int,
    rng: np.random.Generator | int | None = None,
    pool_size: int | None = None,
    replace: bool = False,
) -> MonteCarloDraws:
    """Monte Carlo draws of F for each value of the secret, in bounded memory.

    Chen & Ohrimenko 2023, App. C.1: ``n_samples`` datasets of ``subset_size`` rows per
    value p, round(p·n) of them from the rows satisfying the predicate, drawn without
    replacement. Draws are made and their moments accumulated chunk by chunk.

    Parameters
    ----------
    data : DataFrame, Arrow table, path or Table
    query : Query
    secret : ProportionSecret
    subset_size : int
    n_samples : int
        Datasets per value (≥ 2).
    rng : int, numpy.random.Generator or None
    pool_size : int, optional
        Draw from a uniform pool of this many rows per stratum (≥ ``subset_size``)
        instead of the whole table: for tables too large to featurise whole.
    replace : bool
        Draw each dataset's rows i.i.d. from the strata (the table is a sample of a large
        population) instead of without replacement (the table is the population).

    Returns
    -------
    MonteCarloDraws

    Raises
    ------
    ParameterError
        As :class:`StratifiedSampler`; ``pool_size`` not a positive integer or smaller
        than ``subset_size``.
    """
    n = check_positive_int(subset_size, "subset_size")
    n_samples = check_positive_int(n_samples, "n_samples", minimum=2)
    rng = check_rng(rng)
    table = as_table(data)
    if pool_size is None:
        sampler = StratifiedSampler(table, query, secret, n, replace=replace)
        sizes = (int(sampler.rows_a.size), int(sampler.rows_b.size))
        pool_sizes = None
        method = "full"
    else:
        if not isinstance(secret, ProportionSecret):
            raise ParameterTypeError(
                f"secret must be a ProportionSecret, got {type(secret).__name__}"
            )
        pool = check_positive_int(pool_size, "pool_size")
        if pool < n:
            raise ParameterError(
                f"pool_size={pool} is smaller than subset_size={n}: a pool must hold at least "
                "one dataset's rows of each stratum"
            )
        pool_table, sizes, pool_sizes = draw_pool(table, secret, pool_size=pool, rng=rng)
        sampler = StratifiedSampler(pool_table, query, secret, n, role="pool", replace=replace)
        method = "pool"
    chunk = max(1, (1 << 20) // n)
    samples, means, covs = [], [], []
    for t in range(len(sampler.counts)):
        out = np.empty((n_samples, query.dim))
        acc = MomentAccumulator(query.dim)
        start = 0
        for block in sampler.draw_chunks(t, n_samples, rng, chunk=chunk):
            out[start : start + block.shape[0]] = block
            start += block.shape[0]
            acc.update(block)
        samples.append(out)
        means.append(acc.mean)
        covs.append(acc.covariance(ddof=1))
    resampling = Resampling(
        method=method,
        stratum_sizes=sizes,
        pool_size=pool_size if pool_size is None else int(pool_size),
        pool_strata_sizes=pool_sizes,
        chunk_subsets=min(chunk, n_samples),
    )
    return MonteCarloDraws(tuple(samples), np.stack(means), np.stack(covs), sampler, resampling)
