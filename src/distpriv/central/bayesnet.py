"""Bayesian networks over attribute parameters: max-influence and Markov quilts.

Distributional attribute privacy (Zhang, Ohrimenko & Cummings 2022, Def. 5) hides the
parameter φ_i that governs the distribution of a sensitive column X_i. The parameters
(φ_1, …, φ_m) are drawn from a known hyper-prior P, here a Bayesian network: a DAG over the
attributes, a finite support Φ^k for each φ_k, and one conditional probability table (CPT)
P(φ_k | φ_parents(k)) per attribute (§5, "Bayesian hierarchical modeling").

Two quantities drive the Attribute-Private Markov Quilt Mechanism (Alg. 2):

- the max-influence (Def. 7) e_Θ(X_A | X_i) = max_{a, b, φ_A} log P(φ_A | φ_i^a) / P(φ_A | φ_i^b),
  computed exactly by summing the joint of the φ's over the product of the supports;
- the Markov quilts of X_i (Def. 6): sets X_Q such that the attributes X_R left over are
  independent of X_i given X_Q, found by d-separation on the DAG.

Exact enumeration costs one array of size Π_k |Φ^k| and 2^(m−1) quilts: this is for the
small networks of the paper's examples (a handful of attributes with a few parameter
values each), and the limits below turn larger inputs into a clear error.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..util.validation import readonly

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["MarkovQuilt", "ParameterNetwork"]

# CPT rows must sum to one within this absolute tolerance (rounded decimal inputs).
PROB_ATOL = 1e-9
# The joint over all φ's is materialised; 2²² float64 cells are 32 MB.
MAX_JOINT_CELLS = 2**22
# Max-influences below this are rounding of ratios that are exactly 1.
_ZERO_INFLUENCE = 1e-12
# Every subset of the other attributes is a candidate quilt.
MAX_QUILT_ATTRIBUTES = 14


@dataclass(frozen=True)
class MarkovQuilt:
    """A Markov quilt (X_Q, X_N, X_R) of a sensitive attribute X_i (Zhang et al. 2022, Def. 6)."""

    #: The sensitive attribute X_i.
    secret: str
    #: X_Q: given X_Q, X_R is independent of X_i (d-separation on the DAG).
    quilt: tuple[str, ...]
    #: X_N, the attributes neither in the quilt nor remote; contains X_i.
    nearby: tuple[str, ...]
    #: X_R.
    remote: tuple[str, ...]
    #: e_Θ(X_Q | X_i) (Def. 7); 0 for an empty quilt, ``inf`` when some φ_Q is possible
    #: under one value of φ_i and impossible under another.
    max_influence: float

    @property
    def trivial(self) -> bool:
        """The trivial quilt: X_Q = X_R = ∅, X_N = every attribute."""
        return not self.quilt and not self.remote

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (an infinite max-influence becomes the string "inf")."""
        e = self.max_influence
        return {
            "secret": self.secret,
            "quilt": list(self.quilt),
            "nearby": list(self.nearby),
            "remote": list(self.remote),
            "max_influence": e if math.isfinite(e) else str(e),
            "trivial": self.trivial,
        }


def attribute_names(value: object, what: str, *, distinct: bool = False) -> tuple[str, ...]:
    """A string or a sequence of strings, as a tuple.

    With ``distinct``, the sequence must also name at least one attribute and none twice
    (the attributes and secrets of a query); errors name the parameter as ``what``.
    """
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, Iterable):
        raise ParameterTypeError(f"{what} must be an attribute name or a sequence of them")
    out = tuple(value)
    if distinct and not out:
        raise ParameterError(f"{what} must name at least one attribute")
    for v in out:
        if not isinstance(v, str):
            raise ParameterTypeError(f"{what} must hold attribute names (str), got {v!r}")
    if distinct and len(set(out)) != len(out):
        raise ParameterError(f"{what} must not repeat an attribute, got {list(out)}")
    return out


@dataclass(frozen=True, init=False, eq=False)
class ParameterNetwork:
    """The hyper-prior P over the attribute parameters φ, as a Bayesian network.

    Zhang, Ohrimenko & Cummings 2022, Def. 5 and §5: φ_k parameterises the distribution of
    column X_k; (φ_1, …, φ_m) ~ P with P(φ) = Π_k P(φ_k | φ_parents(k)) (Def. 2).

    Parameters
    ----------
    supports : mapping str -> sequence of hashable
        The finite support Φ^k of each attribute's parameter (e.g. the share of female
        students, ``[0.3, 0.5, 0.7]``). The mapping's order is the attribute order.
    cpts : mapping str -> array_like
        For attribute k with parents (p_1, …, p_r) (in the order given in ``parents``),
        an array of shape (|Φ^p_1|, …, |Φ^p_r|, |Φ^k|) whose last axis is
        P(φ_k | φ_p_1, …, φ_p_r); shape (|Φ^k|,) for a root. Every row must be a
        probability vector (non-negative, summing to 1 within 1e-9).
    parents : mapping str -> sequence of str, optional
        The DAG, as the parents of each attribute (attributes not listed are roots).

    Raises
    ------
    ParameterError
        Unknown attribute, a cycle, a CPT of the wrong shape, a row that is not a
        probability vector, a support value with probability 0 under P (its
        max-influence would be undefined), or a network too large to enumerate.
    ParameterTypeError
        Arguments of the wrong type.

    Examples
    --------
    >>> net = ParameterNetwork(
    ...     {"a": [0.2, 0.8], "b": [0.1, 0.9]},
    ...     {"a": [0.5, 0.5], "b": [[0.75, 0.25], [0.25, 0.75]]},
    ...     parents={"b": ["a"]},
    ... )
    >>> round(net.max_influence("a", ["b"]), 4)  # log(0.75 / 0.25)
    1.0986
    """

    attributes: tuple[str, ...]
    supports: tuple[tuple[Hashable, ...], ...]
    parents: tuple[tuple[str, ...], ...]
    cpts: tuple[np.ndarray, ...]
    _graph: nx.DiGraph[str] = field(repr=False)
    _index: dict[str, int] = field(repr=False)

    def __init__(
        self,
        supports: Mapping[str, Sequence[Hashable]],
        cpts: Mapping[str, Any],
        parents: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        if not isinstance(supports, Mapping):
            raise ParameterTypeError(
                f"supports must map attribute names to parameter values, got "
                f"{type(supports).__name__}"
            )
        if not supports:
            raise ParameterError("supports must name at least one attribute")
        attrs: list[str] = []
        sups: list[tuple[Hashable, ...]] = []
        for name, values in supports.items():
            if not isinstance(name, str):
                raise ParameterTypeError(f"attribute names must be strings, got {name!r}")
            if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray):
                raise ParameterTypeError(
                    f"supports[{name!r}] must be a sequence of parameter values, got {values!r}"
                )
            vals = tuple(v.item() if isinstance(v, np.generic) else v for v in values)
            if not vals:
                raise ParameterError(f"supports[{name!r}] must hold at least one value")
            try:
                distinct = len(set(vals)) == len(vals)
            except TypeError as exc:
                raise ParameterTypeError(
                    f"supports[{name!r}] values must be hashable, got {vals!r}"
                ) from exc
            if not distinct:
                raise ParameterError(f"supports[{name!r}] values must be distinct, got {vals!r}")
            attrs.append(name)
            sups.append(vals)
        index = {a: k for k, a in enumerate(attrs)}
        par = self._check_parents(parents, index)
        import networkx as nx  # imported when a network is built, not by the registry

        graph: nx.DiGraph[str] = nx.DiGraph()
        graph.add_nodes_from(attrs)
        graph.add_edges_from((p, a) for a, ps in zip(attrs, par, strict=True) for p in ps)
        if not nx.is_directed_acyclic_graph(graph):
            cycle = nx.find_cycle(graph)
            path = " -> ".join([*(u for u, _ in cycle), cycle[0][0]])
            raise ParameterError(
                f"parents must form a directed acyclic graph (a Bayesian network); "
                f"they contain the cycle {path}"
            )
        cards = [len(s) for s in sups]
        cells = math.prod(cards)
        if cells > MAX_JOINT_CELLS:
            raise ParameterError(
                f"exact inference enumerates the product of the supports, {cells} "
                f"combinations here; at most {MAX_JOINT_CELLS} are supported"
            )
        tables = self._check_cpts(cpts, attrs, sups, par, cards, index)
        object.__setattr__(self, "attributes", tuple(attrs))
        object.__setattr__(self, "supports", tuple(sups))
        object.__setattr__(self, "parents", par)
        object.__setattr__(self, "cpts", tables)
        object.__setattr__(self, "_graph", graph)
        object.__setattr__(self, "_index", index)
        self._check_positive_marginals()

    @staticmethod
    def _check_parents(
        parents: Mapping[str, Sequence[str]] | None, index: dict[str, int]
    ) -> tuple[tuple[str, ...], ...]:
        out: list[tuple[str, ...]] = [() for _ in index]
        if parents is None:
            return tuple(out)
        if not isinstance(parents, Mapping):
            raise ParameterTypeError(
                f"parents must map attribute names to their parents, got {type(parents).__name__}"
            )
        for child, ps in parents.items():
            if child not in index:
                raise ParameterError(
                    f"parents names unknown attribute {child!r}; attributes: {list(index)}"
                )
            names = attribute_names(ps, f"parents[{child!r}]")
            for p in names:
                if p not in index:
                    raise ParameterError(
                        f"parents[{child!r}] names unknown attribute {p!r}; "
                        f"attributes: {list(index)}"
                    )
            if len(set(names)) != len(names):
                raise ParameterError(f"parents[{child!r}] lists a parent twice: {list(names)}")
            out[index[child]] = names
        return tuple(out)

    @staticmethod
    def _check_cpts(
        cpts: Mapping[str, Any],
        attrs: list[str],
        sups: list[tuple[Hashable, ...]],
        par: tuple[tuple[str, ...], ...],
        cards: list[int],
        index: dict[str, int],
    ) -> tuple[np.ndarray, ...]:
        if not isinstance(cpts, Mapping):
            raise ParameterTypeError(
                f"cpts must map attribute names to probability tables, got {type(cpts).__name__}"
            )
        extra = [k for k in cpts if k not in index]
        if extra:
            raise ParameterError(
                f"cpts names unknown attribute {extra[0]!r}; attributes: {list(index)}"
            )
        tables = []
        for a, ps in zip(attrs, par, strict=True):
            if a not in cpts:
                raise ParameterError(f"cpts has no conditional probability table for {a!r}")
            try:
                t = np.asarray(cpts[a], dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ParameterTypeError(
                    f"cpts[{a!r}] must be an array of probabilities, got {cpts[a]!r}"
                ) from exc
            want = (*(cards[index[p]] for p in ps), cards[index[a]])
            if t.shape != want:
                order = ", ".join([*ps, a])
                raise ParameterError(
                    f"cpts[{a!r}] must have shape {want} (axes: {order}), got {t.shape}"
                )
            bad = ~np.isfinite(t) | (t < 0) | (t > 1 + PROB_ATOL)
            if np.any(bad):
                where = tuple(int(i) for i in np.argwhere(bad)[0])
                raise ParameterError(
                    f"cpts[{a!r}] must hold probabilities in [0, 1]; entry {where} is {t[where]!r}"
                )
            sums = t.sum(axis=-1)
            off = np.abs(sums - 1.0) > PROB_ATOL
            if np.any(off):
                where = tuple(int(i) for i in np.argwhere(off)[0]) if sums.ndim else ()
                cond = ", ".join(
                    f"{p}={sups[index[p]][w]!r}" for p, w in zip(ps, where, strict=True)
                )
                raise ParameterError(
                    f"cpts[{a!r}] rows must sum to 1 (within {PROB_ATOL:g}); the row for "
                    f"{'parents ' + cond if cond else 'the root'} sums to {float(sums[where])!r}"
                )
            tables.append(readonly(t))
        return tuple(tables)

    def _check_positive_marginals(self) -> None:
        """Every support value must be possible: Def. 7 conditions on each φ_i value."""
        joint = self.joint
        for k, a in enumerate(self.attributes):
            others = tuple(j for j in range(len(self.attributes)) if j != k)
            marg = joint.sum(axis=others)
            zero = np.flatnonzero(marg <= 0.0)
            if zero.size:
                v = self.supports[k][int(zero[0])]
                raise ParameterError(
                    f"parameter value {v!r} of attribute {a!r} has probability 0 under the "
                    f"hyper-prior; the max-influence (Zhang et al. 2022, Def. 7) conditions "
                    f"on it and would be undefined: remove it from supports[{a!r}] and "
                    "from the conditional probability tables"
                )

    # ------------------------------------------------------------------ structure
    @property
    def graph(self) -> nx.DiGraph[str]:
        """The DAG (a read-only view)."""
        return self._graph.copy(as_view=True)

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """|Φ^k| for each attribute, in attribute order."""
        return tuple(len(s) for s in self.supports)

    def index(self, attribute: str, what: str = "attribute") -> int:
        """Position of ``attribute``; ParameterError naming ``what`` if it is unknown."""
        if not isinstance(attribute, str):
            raise ParameterTypeError(f"{what} must be an attribute name, got {attribute!r}")
        if attribute not in self._index:
            raise ParameterError(
                f"{what} {attribute!r} is not an attribute of the network; "
                f"attributes: {list(self.attributes)}"
            )
        return self._index[attribute]

    def _ordered(self, names: Iterable[str]) -> tuple[str, ...]:
        return tuple(sorted(set(names), key=self._index.__getitem__))

    # ------------------------------------------------------------------ inference
    @cached_property
    def joint(self) -> np.ndarray:
        """P(φ_1, …, φ_m) over the product of the supports, shape (|Φ^1|, …, |Φ^m|)."""
        m = len(self.attributes)
        out = np.ones(self.cardinalities)
        for k, (ps, table) in enumerate(zip(self.parents, self.cpts, strict=True)):
            axes = [self._index[p] for p in ps] + [k]
            # Put the CPT's axes in ascending attribute order, then broadcast.
            order = np.argsort(axes)
            shape = [1] * m
            for ax in axes:
                shape[ax] = self.cardinalities[ax]
            out = out * np.transpose(table, order).reshape(shape)
        out.setflags(write=False)
        return out

    def marginal(self, attributes: Sequence[str]) -> np.ndarray:
        """P(φ_A) for the attributes in the given order, shape (|Φ^a| for a in A).

        Parameters
        ----------
        attributes : sequence of str
            Distinct attributes A.
        """
        names = attribute_names(attributes, "attributes")
        axes = [self.index(a) for a in names]
        if len(set(axes)) != len(axes):
            raise ParameterError(f"attributes must be distinct, got {list(names)}")
        others = tuple(k for k in range(len(self.attributes)) if k not in axes)
        marg = self.joint.sum(axis=others)
        # The kept axes are in ascending order; permute them to the requested order.
        return np.transpose(marg, np.argsort(np.argsort(axes)))

    def max_influence(self, secret: str, attributes: Iterable[str]) -> float:
        """e_Θ(X_A | X_i): the max-influence of X_i on X_A (Zhang et al. 2022, Def. 7).

        max over φ_i^a, φ_i^b ∈ Φ^i and φ_A ∈ Φ^A of log P(φ_A | φ_i^a) / P(φ_A | φ_i^b),
        by exact summation of the joint. Values φ_A impossible under every φ_i are
        skipped (0/0); one possible under φ_i^a and impossible under φ_i^b gives ``inf``.

        Parameters
        ----------
        secret : str
            The sensitive attribute X_i.
        attributes : iterable of str
            X_A, not containing X_i. Empty gives 0.

        Returns
        -------
        float
            e ≥ 0, or ``inf``.
        """
        i = self.index(secret, "secret")
        names = self._ordered(attribute_names(attributes, "attributes"))
        for a in names:
            self.index(a)
        if secret in names:
            raise ParameterError(
                f"the max-influence of {secret!r} is taken over other attributes; "
                f"attributes contains it: {list(names)}"
            )
        if not names:
            return 0.0
        joint = self.marginal([self.attributes[i], *names])
        flat = joint.reshape(joint.shape[0], -1)
        cond = flat / flat.sum(axis=1, keepdims=True)  # P(φ_A | φ_i = a), rows > 0
        hi = cond.max(axis=0)
        lo = cond.min(axis=0)
        possible = hi > 0.0
        if np.any(lo[possible] == 0.0):
            return math.inf
        e = float(np.max(np.log(hi[possible] / lo[possible])))
        # Independent attributes give ratios of 1 up to rounding of the sums.
        return e if e > _ZERO_INFLUENCE else 0.0

    def d_separated(self, secret: str, remote: Iterable[str], given: Iterable[str]) -> bool:
        """Whether X_R ⫫ X_i | X_Q in every distribution of the DAG (networkx d-separation)."""
        i = self.attributes[self.index(secret, "secret")]
        rem = set(attribute_names(remote, "remote"))
        giv = set(attribute_names(given, "given"))
        for a in rem | giv:
            self.index(a)
        if not rem:
            return True
        import networkx as nx  # loaded already: __init__ built the graph with it

        return bool(nx.is_d_separator(self._graph, {i}, rem, giv))

    def markov_quilts(self, secret: str) -> tuple[MarkovQuilt, ...]:
        """Every Markov quilt of X_i, with its max-influence (Zhang et al. 2022, Def. 6–7).

        For each subset X_Q of the other attributes, X_R is the largest set d-separated
        from X_i given X_Q (d-separation of sets is d-separation of every member) and
        X_N the rest. The trivial quilt (X_Q = X_R = ∅) comes first; quilts follow by
        size of X_Q, then attribute order. Quilts with X_R = ∅ are kept: they still
        remove X_Q from the sensitivity (Alg. 2 uses Δ_{A∩N}F).

        Parameters
        ----------
        secret : str
            The sensitive attribute X_i.

        Returns
        -------
        tuple of MarkovQuilt
            The trivial quilt and one quilt per non-empty X_Q (and X_Q = ∅ too when it
            already leaves a remote part).
        """
        i = self.index(secret, "secret")
        name = self.attributes[i]
        others = [a for a in self.attributes if a != name]
        if len(others) > MAX_QUILT_ATTRIBUTES:
            raise ParameterError(
                f"enumerating the Markov quilts of {name!r} visits 2^{len(others)} subsets; "
                f"at most {MAX_QUILT_ATTRIBUTES} other attributes are supported"
            )
        import networkx as nx  # loaded already: __init__ built the graph with it

        out = [MarkovQuilt(name, (), tuple(self.attributes), (), 0.0)]
        for size in range(len(others) + 1):
            for q in itertools.combinations(others, size):
                qs = set(q)
                remote = tuple(
                    a
                    for a in others
                    if a not in qs and nx.is_d_separator(self._graph, {name}, {a}, qs)
                )
                if not q and not remote:
                    continue  # the trivial quilt, already listed
                nearby = tuple(a for a in self.attributes if a not in qs and a not in remote)
                out.append(MarkovQuilt(name, q, nearby, remote, self.max_influence(name, q)))
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description: attributes, supports (as strings), parents and CPTs."""
        return {
            "attributes": list(self.attributes),
            "supports": {
                a: [str(v) for v in s] for a, s in zip(self.attributes, self.supports, strict=True)
            },
            "parents": {
                a: list(p) for a, p in zip(self.attributes, self.parents, strict=True) if p
            },
            "cpts": {a: t.tolist() for a, t in zip(self.attributes, self.cpts, strict=True)},
        }
