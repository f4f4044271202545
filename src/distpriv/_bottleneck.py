"""Feasibility of one threshold for :mod:`distpriv.distances`: matchings and max-flows.

Whether every unit of mass (W∞) or at least 1 − δ of it ((W, δ)-closeness) can be moved
along distances ≤ t: a maximum bipartite matching (equal-size unweighted samples), a
bipartite max-flow solved as a small linear program (weighted), and the bottleneck
threshold grown together with one matching (minimax augmenting paths from a warm start).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

# --------------------------------------------------------------------------------------------
# Feasibility tests for one threshold
# --------------------------------------------------------------------------------------------


def _max_flow(allowed: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """Largest mass a coupling can put on the ``allowed`` pairs.

    Solves max Σ γ_ij over allowed (i, j) subject to Σ_j γ_ij ≤ a_i, Σ_i γ_ij ≤ b_j, γ ≥ 0:
    a bipartite max-flow, written as an LP with one variable per allowed edge.
    """
    rows, cols = np.nonzero(allowed)
    n_edges = rows.size
    if n_edges == 0:
        return 0.0
    n, k = allowed.shape
    edge = np.arange(n_edges)
    constraints = coo_matrix(
        (np.ones(2 * n_edges), (np.concatenate([rows, n + cols]), np.concatenate([edge, edge]))),
        shape=(n + k, n_edges),
    ).tocsr()
    # scipy-stubs types A_ub/A_eq as dense only; HiGHS takes the sparse matrix as is.
    res = linprog(  # type: ignore[call-overload]
        -np.ones(n_edges),
        A_ub=constraints,
        b_ub=np.concatenate([a, b]),
        bounds=(0.0, None),
        method="highs",
    )
    if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
        raise RuntimeError(f"max-flow LP failed: {res.message}")
    return float(-res.fun)


def _smallest_feasible(values: np.ndarray, lo: int, feasible: Callable[[float], bool]) -> float:
    """First entry of sorted ``values`` at index ≥ ``lo`` that passes the monotone ``feasible``.

    The caller guarantees that the last entry is feasible (all pairs allowed).
    """
    hi = values.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if feasible(values[mid]):
            hi = mid
        else:
            lo = mid + 1
    return float(values[lo])


# Candidate partners per row (and per column) for the warm-start matching: its nearest ones,
# and random ones, which spread the choices the way a perfect matching must (a shift of
# one sample onto the other is rarely a nearest-neighbour map). A few dozen suffice for
# the sparse matching to be nearly maximum at milliseconds' cost.
_WARM_NEAREST = 8
_WARM_RANDOM = 48


def _warm_start(dist: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """A large matching using only pairs at distance ≤ ``t`` (not necessarily maximum).

    Hopcroft–Karp (scipy) on a sparse subgraph of the pairs within ``t``: each row's and
    each column's ``_WARM_NEAREST`` nearest partners and ``_WARM_RANDOM`` random ones. The
    random choice only decides which pairs this heuristic looks at (the caller's answer is
    exact whatever it picks), so it uses a fixed private generator for reproducibility.
    Returns ``(match_row, match_col)``, −1 where unmatched.
    """
    n, k = dist.shape
    pick = np.random.Generator(np.random.PCG64(0x5EED))
    near_c, near_r = min(_WARM_NEAREST, k), min(_WARM_NEAREST, n)
    rows = np.concatenate(
        [
            np.repeat(np.arange(n), near_c + _WARM_RANDOM),
            np.argpartition(dist, near_r - 1, axis=0)[:near_r].ravel(),
            pick.integers(0, n, size=_WARM_RANDOM * k),
        ]
    )
    cols = np.concatenate(
        [
            np.hstack(
                [
                    np.argpartition(dist, near_c - 1, axis=1)[:, :near_c],
                    pick.integers(0, k, size=(n, _WARM_RANDOM)),
                ]
            ).ravel(),
            np.tile(np.arange(k), near_r + _WARM_RANDOM),
        ]
    )
    ok = dist[rows, cols] <= t
    graph = csr_matrix((np.ones(int(ok.sum()), dtype=np.int8), (rows[ok], cols[ok])), shape=(n, k))
    graph.sum_duplicates()
    match_row = maximum_bipartite_matching(graph, perm_type="column").astype(np.int64)
    match_col = np.full(k, -1, dtype=np.int64)
    hit = match_row >= 0
    match_col[match_row[hit]] = np.flatnonzero(hit)
    return match_row, match_col


def _augment_disjoint(
    ends: np.ndarray, pred: np.ndarray, match_row: np.ndarray, match_col: np.ndarray, limit: int
) -> int:
    """Flip the tree paths ending at the free columns ``ends`` that share no row; count them.

    Each path runs back from a free column through ``pred`` (row reaching the column) and
    the rows' current partners to a free row. Vertex-disjoint augmenting paths can be flipped
    together (each keeps M a matching), so one search serves several augmentations.
    """
    used = np.zeros(match_row.size, dtype=bool)
    done = 0
    for end in ends.tolist():
        path = []
        col = end
        while col >= 0:
            row = int(pred[col])
            if used[row]:
                break
            path.append((row, col))
            col = int(match_row[row])
        else:
            for row, col in path:
                used[row] = True
                match_row[row], match_col[col] = col, row
            done += 1
            if done == limit:
                break
        # A path meeting a row already flipped in this batch waits for the next search.
    return done


def _resolve(
    dist: np.ndarray,
    cols: np.ndarray,
    origin: np.ndarray,
    blocks: list[np.ndarray],
    pred: np.ndarray,
) -> None:
    """Set ``pred[c]`` to the nearest row of block ``origin[c]`` for each column c in ``cols``."""
    src = origin[cols]
    for b in np.unique(src).tolist():
        sel = cols[src == b]
        rows = blocks[b]
        pred[sel] = rows[dist[np.ix_(rows, sel)].argmin(axis=0)]


def _bottleneck_threshold(dist: np.ndarray, need: int) -> float:
    """Smallest t such that the pairs at distance ≤ t admit a matching of ``need`` rows.

    Exact; the answer is one of the entries of ``dist`` (shape (n, k), ``need`` ≤ min(n, k)).

    Notes
    -----
    The threshold grows with the matching, which is reused throughout (no search over the
    sorted distances, no matching rebuilt per threshold). Invariant: M is a matching on pairs
    at distance ≤ t and t ≤ t*, the answer. While |M| < need, M is not maximum in the graph
    at t*, so (Berge) it has an augmenting path there; the smallest t' ≥ t for which an
    augmenting path exists — a minimax path from the free rows to a free column, where only
    non-matching pairs count because matched ones are already ≤ t — is therefore ≤ t*.
    Augmenting along it and setting t = t' keeps the invariant and grows M by one. When
    |M| = need, t ≥ t* as well, so t = t*.

    The minimax search is a Dijkstra-like sweep vectorised over columns: ``slack[j]`` is the
    least distance from a reached row to column j; all columns with slack ≤ t are reached at
    once (a breadth-first layer), and t is raised to the least slack only when none is. It
    starts from the lower bound max(need-th smallest nearest-neighbour distance of the rows,
    same for the columns): every matched row and column pays at least its nearest distance.
    Each augmentation costs O(n·k) at worst, and the warm start (:func:`_warm_start`) leaves
    few of them.
    """
    k = dist.shape[1]
    if need <= 0:
        return float(dist.min())
    t = max(
        float(np.partition(dist.min(axis=1), need - 1)[need - 1]),
        float(np.partition(dist.min(axis=0), need - 1)[need - 1]),
    )
    match_row, match_col = _warm_start(dist, t)
    size = int(np.count_nonzero(match_row >= 0))
    while size < need:
        # Rows enter the search tree in blocks (the free rows, then each layer's partners);
        # ``slack`` keeps, per column, the least distance from a tree row and ``origin`` the
        # block it came from, so the exact row (``pred``) is looked up only for the columns
        # the search reaches — a min over rows is far cheaper than an argmin.
        blocks = [np.flatnonzero(match_row < 0)]
        slack = dist[blocks[0]].min(axis=0)
        origin = np.zeros(k, dtype=np.int64)
        pred = np.full(k, -1, dtype=np.int64)
        reached = np.zeros(k, dtype=bool)
        while True:
            layer = np.flatnonzero(~reached & (slack <= t))
            if layer.size == 0:
                # No column is reachable at t: raise t to the least pair leaving the tree.
                t = float(slack[~reached].min())
                continue
            open_cols = layer[match_col[layer] < 0]
            if open_cols.size:
                _resolve(dist, open_cols, origin, blocks, pred)
                size += _augment_disjoint(open_cols, pred, match_row, match_col, need - size)
                break
            _resolve(dist, layer, origin, blocks, pred)
            reached[layer] = True
            rows = match_col[layer]
            blocks.append(rows)
            cand = dist[rows].min(axis=0)
            better = (cand < slack) & ~reached
            slack = np.where(better, cand, slack)
            origin = np.where(better, len(blocks) - 1, origin)
    return t
