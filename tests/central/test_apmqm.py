"""APMQM (Zhang, Ohrimenko & Cummings 2022, Alg. 2): networks, max-influence, quilts, noise.

One implementation against another: max-influence against a brute-force enumeration of the
joint with Python loops; Markov quilts against d-separation by the moralised ancestral
graph. Worked example: Example 1 (the school). Privacy: the exact output distribution of a
chain network under the paper's data model (columns i.i.d. Bernoulli(φ_k) given φ).
"""

from __future__ import annotations

import itertools
import json
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from distpriv import ParameterError, ParameterTypeError, calibrate
from distpriv.central import (
    AttributeNetworkModel,
    ColumnQuery,
    ParameterNetwork,
    apmqm_accuracy,
    apmqm_quilts,
)
from distpriv.datasets import school_network
from distpriv.guarantees import to_jsonable

N = 100


# ---------------------------------------------------------------------------- helpers
def random_network(seed: int, *, zeros: bool = False) -> ParameterNetwork:
    """A random DAG over 3–5 attributes (edges respect a random order), random CPTs."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, 6))
    names = [f"x{k}" for k in range(m)]
    order = rng.permutation(m)
    parents = {}
    for pos, k in enumerate(order):
        earlier = order[:pos]
        chosen = [names[j] for j in earlier if rng.random() < 0.5][:2]
        if chosen:
            parents[names[k]] = chosen
    cards = {n: int(rng.integers(2, 4)) for n in names}
    cpts = {}
    for n in names:
        shape = (*(cards[p] for p in parents.get(n, [])), cards[n])
        t = (
            rng.dirichlet(np.ones(cards[n]), size=shape[:-1])
            if shape[:-1]
            else rng.dirichlet(np.ones(cards[n]))
        )
        if zeros and n in parents and rng.random() < 0.5:
            # A conditional zero (never a zero marginal: each value keeps some row > 0).
            t = np.array(t)
            t[(0,) * (len(shape) - 1)] = np.eye(cards[n])[0]
        cpts[n] = t
    supports = {n: [round(0.1 + 0.8 * v / cards[n], 3) for v in range(cards[n])] for n in names}
    return ParameterNetwork(supports, cpts, parents)


def brute_force_influence(net: ParameterNetwork, secret: str, attrs: list[str]) -> float:
    """Def. 7 by looping over every assignment of the φ's."""
    names = net.attributes
    pos = {a: k for k, a in enumerate(names)}
    joint: dict[tuple, float] = {}
    for assign in itertools.product(*(range(len(s)) for s in net.supports)):
        p = 1.0
        for k in range(len(names)):
            idx = (*(assign[pos[q]] for q in net.parents[k]), assign[k])
            p *= float(net.cpts[k][idx])
        key = (assign[pos[secret]], tuple(assign[pos[a]] for a in attrs))
        joint[key] = joint.get(key, 0.0) + p
    ci = len(net.supports[pos[secret]])
    p_i = [sum(v for (a, _), v in joint.items() if a == i) for i in range(ci)]
    worst = 0.0
    for phi_a in itertools.product(*(range(len(net.supports[pos[a]])) for a in attrs)):
        cond = [joint.get((i, phi_a), 0.0) / p_i[i] for i in range(ci)]
        if max(cond) == 0.0:
            continue
        if min(cond) == 0.0:
            return math.inf
        worst = max(worst, math.log(max(cond) / min(cond)))
    return worst


def d_separated_moral(graph: nx.DiGraph, x: str, ys: set[str], zs: set[str]) -> bool:
    """d-separation by Lauritzen's criterion: separation in the moralised ancestral graph."""
    keep = {x, *ys, *zs}
    for v in list(keep):
        keep |= nx.ancestors(graph, v)
    sub = graph.subgraph(keep)
    moral = nx.Graph(sub.to_undirected())
    for v in sub:
        ps = list(sub.predecessors(v))
        moral.add_edges_from(itertools.combinations(ps, 2))
    moral.remove_nodes_from(zs)
    return not any(nx.has_path(moral, x, y) for y in ys if y in moral)


def chain(*strengths: float) -> ParameterNetwork:
    """a → b → c → d, binary parameters; P(child keeps the parent's value) per edge."""
    s = strengths * 3 if len(strengths) == 1 else (strengths or (0.6, 0.6, 0.6))
    t = [[[x, 1 - x], [1 - x, x]] for x in s]
    return ParameterNetwork(
        {k: [0.2, 0.8] for k in "abcd"},
        {"a": [0.5, 0.5], "b": t[0], "c": t[1], "d": t[2]},
        {"b": ["a"], "c": ["b"], "d": ["c"]},
    )


def search(net, secret, query, eps):
    return apmqm_quilts(AttributeNetworkModel(net, secret, query), epsilon=eps)[secret]


# ---------------------------------------------------------------------------- max-influence
class TestMaxInfluence:
    @settings(max_examples=40)
    @given(seed=st.integers(0, 2**32 - 1), zeros=st.booleans())
    def test_against_brute_force(self, seed, zeros):
        net = random_network(seed, zeros=zeros)
        rng = np.random.default_rng(seed + 1)
        secret = str(rng.choice(net.attributes))
        others = [a for a in net.attributes if a != secret]
        for size in range(len(others) + 1):
            for attrs in itertools.combinations(others, size):
                got = net.max_influence(secret, attrs)
                want = brute_force_influence(net, secret, list(attrs))
                assert not math.isnan(got)
                if math.isinf(want):
                    assert math.isinf(got)
                else:
                    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)

    def test_two_nodes_closed_form(self):
        net = ParameterNetwork(
            {"a": [0, 1], "b": [0, 1]},
            {"a": [0.5, 0.5], "b": [[0.8, 0.2], [0.4, 0.6]]},
            {"b": ["a"]},
        )
        assert net.max_influence("a", ["b"]) == pytest.approx(math.log(0.6 / 0.2))
        assert net.max_influence("a", []) == 0.0

    def test_independent_attributes_have_no_influence(self):
        net = ParameterNetwork(
            {"a": [0, 1], "b": [0, 1, 2]}, {"a": [0.3, 0.7], "b": [0.2, 0.3, 0.5]}
        )
        assert net.max_influence("a", ["b"]) == 0.0

    def test_joint_and_marginal(self):
        net = school_network()
        assert net.joint.sum() == pytest.approx(1.0)
        np.testing.assert_allclose(net.marginal(["income"]), [0.3, 0.4, 0.3])
        pg = net.marginal(["gender", "income"])  # requested order is kept
        np.testing.assert_allclose(
            pg.T / pg.sum(axis=0)[None, :].T, np.asarray(net.cpts[2]), rtol=1e-12
        )


# ---------------------------------------------------------------------------- quilts
class TestMarkovQuilts:
    @settings(max_examples=30)
    @given(seed=st.integers(0, 2**32 - 1))
    def test_remote_parts_are_exactly_the_d_separated_attributes(self, seed):
        net = random_network(seed)
        g = net.graph
        for secret in net.attributes:
            quilts = net.markov_quilts(secret)
            assert quilts[0].trivial and quilts[0].nearby == net.attributes
            seen = set()
            for q in quilts:
                assert secret in q.nearby and secret not in q.quilt
                assert set(q.quilt) | set(q.nearby) | set(q.remote) == set(net.attributes)
                assert d_separated_moral(g, secret, set(q.remote), set(q.quilt))
                for v in q.nearby if not q.trivial else ():  # the trivial N is everything
                    if v != secret:
                        assert not d_separated_moral(g, secret, {v}, set(q.quilt))
                assert q.max_influence == pytest.approx(net.max_influence(secret, q.quilt))
                seen.add((q.quilt, q.remote))
            assert len(seen) == len(quilts)

    def test_chain_quilt(self):
        net = chain()
        q = {x.quilt: x for x in net.markov_quilts("a")}
        assert q[("b",)].nearby == ("a",) and q[("b",)].remote == ("c", "d")
        assert q[("c",)].nearby == ("a", "b") and q[("c",)].remote == ("d",)

    def test_chain_search_is_trivial_when_no_quilt_helps(self):
        # The query reads the secret's own column: every quilt keeps it in N, so
        # Δ_{A∩N}F = Δ_AF and ε − e ≤ ε: nothing beats the trivial quilt.
        for eps in (0.1, 0.5, 1.0, 3.0):
            res = search(chain(), "b", ColumnQuery.count("b", n=N), eps)
            assert res.chosen.quilt.trivial and res.chosen.scale == N / eps
            mech = calibrate(
                "apmqm",
                AttributeNetworkModel(chain(), "b", ColumnQuery.count("b", n=N)),
                epsilon=eps,
            )
            assert mech.laplace_scales.tolist() == [N / eps]
        assert not res.fell_back and "none gives less noise" in res.note

    def test_chain_quilt_removes_remote_queries(self):
        net = chain(0.6)
        e_b = net.max_influence("a", ["b"])
        res = search(net, "a", ColumnQuery.count("d", n=N), 1.0)
        by_q = {c.quilt.quilt: c for c in res.candidates}
        assert e_b < 1.0 and by_q[("b",)].scale == 0.0 and by_q[("b",)].quilt.remote == ("c", "d")
        # d itself as the quilt (R = ∅) also shields the query, with a smaller influence.
        assert res.chosen.scale == 0.0 and res.chosen.quilt.quilt == ("d",)
        assert res.chosen.quilt.max_influence == pytest.approx(net.max_influence("a", ["d"]))
        assert net.max_influence("a", ["d"]) < e_b

    def test_fall_back_when_every_quilt_is_too_influential(self):
        net = chain(0.95)  # e(b | a) = log 19 ≈ 2.94 on every edge
        res = search(net, "a", ColumnQuery.count("d", n=N), 1.0)
        assert res.fell_back and res.chosen.quilt.trivial and res.chosen.scale == N
        assert "fell back to the trivial quilt" in res.note
        mech = calibrate(
            "apmqm", AttributeNetworkModel(net, "a", ColumnQuery.count("d", n=N)), epsilon=1.0
        )
        assert any("fell back" in n for n in mech.guarantee.notes)
        assert mech.diagnostics["per_secret"]["a"]["fell_back"] is True


# ---------------------------------------------------------------------------- Example 1
class TestSchoolExample:
    net = school_network()
    e_gender = net.max_influence("income", ["gender"])

    def test_the_quilt_exists(self):
        q = {x.quilt: x for x in self.net.markov_quilts("income")}
        gq = q[("gender",)]
        assert gq.nearby == ("income", "sat") and gq.remote == ("height", "weight")
        assert self.e_gender == pytest.approx(math.log(0.40 / 0.25))
        assert self.net.max_influence("income", ["sat"]) == pytest.approx(math.log(7))

    def test_height_count_needs_no_noise(self):
        model = AttributeNetworkModel(self.net, "income", ColumnQuery.count("height", n=N))
        for eps in (0.5, 1.0, 2.0):
            assert self.e_gender < eps
            mech = calibrate("apmqm", model, epsilon=eps)
            assert mech.noise.is_zero and mech.diagnostics["scale"] == 0.0
            chosen = mech.diagnostics["per_secret"]["income"]["chosen"]
            assert chosen["quilt"] == ["gender"] and chosen["remote"] == ["height", "weight"]
            assert mech.release([42.0], rng=0).value.tolist() == [42.0]
        # Below the influence of gender no quilt is usable: the trivial quilt's n/ε.
        mech = calibrate("apmqm", model, epsilon=0.4)
        assert mech.laplace_scales.tolist() == [N / 0.4]

    def test_sat_condition_adds_laplace_noise(self):
        eps = 1.0
        formula = N / (eps - self.e_gender)  # Δ_SAT F / (ε − e(gender | income)), Δ_SAT F = n
        count = ColumnQuery.count(["height", "sat"], n=N)
        res = search(self.net, "income", count, eps)
        gq = next(c for c in res.candidates if c.quilt.quilt == ("gender",))
        assert gq.queried_nearby == ("sat",) and gq.sensitivity == N
        assert gq.scale == pytest.approx(formula, rel=1e-12)
        # For a count Δ_SAT F = Δ_A F = n, so that quilt (n/(ε − e)) loses to the trivial
        # one (n/ε), which Alg. 2 keeps.
        assert res.chosen.quilt.trivial and res.chosen.scale == N / eps
        # With the two counts (Δ_SAT F = n < Δ_A F = 2n), Alg. 2 adds exactly the noise of
        # the quilt {gender}: Laplace(Δ_SAT F / (ε − e(gender | income))).
        pair = ColumnQuery.sums({"height": (0, 1), "sat": (0, 1)}, n=N)
        mech = calibrate("apmqm", AttributeNetworkModel(self.net, "income", pair), epsilon=eps)
        assert mech.diagnostics["per_secret"]["income"]["chosen"]["quilt"] == ["gender"]
        np.testing.assert_allclose(mech.laplace_scales, [formula, formula], rtol=1e-12)
        draws = mech.noise.sample(20_000, 5)
        # E|Laplace(b)| = b, sd b: 5 standard errors.
        assert abs(np.abs(draws).mean() - formula) < 5 * formula / math.sqrt(draws.size)

    def test_guarantee_and_diagnostics(self):
        model = AttributeNetworkModel(self.net, "income", ColumnQuery.count(["height", "sat"], n=N))
        mech = calibrate("apmqm", model, epsilon=1.0, delta=1e-5)
        g = mech.guarantee
        assert g.notion == "distributional attribute privacy" and g.delta == 0.0
        assert g.theorem == "Zhang, Ohrimenko & Cummings 2022, Alg. 2 / Thm 3"
        assert g.calibration is None and len(g.pairs) == 3
        assert {a.name: a.holds for a in g.assumptions} == {
            "bayesian-network": True,
            "conditional-independence": None,
            "column-sensitivity": True,
        }
        assert any("delta=1e-05 was given" in n for n in g.notes)
        quilts = mech.diagnostics["per_secret"]["income"]["quilts"]
        assert len(quilts) == 16 and quilts[0]["trivial"]
        assert {q["usable"] for q in quilts} == {True, False}
        text = json.dumps(mech.to_dict(), allow_nan=False)
        assert '"scale": "inf"' in text
        assert mech.diagnostics["accuracy_alpha"] == pytest.approx(N * math.log(20))
        assert apmqm_accuracy(2.0, 0.1, dim=2) == pytest.approx(2 * math.log(20))

    def test_several_secrets_take_the_largest_scale(self):
        query = ColumnQuery.count("height", n=N)
        both = calibrate(
            "apmqm", AttributeNetworkModel(self.net, ["income", "sat"], query), epsilon=1.0
        )
        each = [
            calibrate("apmqm", AttributeNetworkModel(self.net, s, query), epsilon=1.0).diagnostics[
                "scale"
            ]
            for s in ("income", "sat", "gender")
        ]
        assert both.diagnostics["scale"] == max(each[:2])
        assert each[2] == N / 1.0  # height's parameter is a function of gender's
        assert set(both.diagnostics["per_secret"]) == {"income", "sat"}


# ---------------------------------------------------------------------------- Thm 3, exactly
def output_law(net, secret, phi_i, cols, n, scale, ys):
    """Density (pmf when scale = 0) of Σ_cols Binomial(n, φ_col) + Laplace(scale) given φ_i.

    The data model of Def. 5: columns independent given φ, column k i.i.d. Bernoulli(φ_k).
    """
    others = [c for c in cols if c != secret]
    joint = net.marginal([secret, *others])[phi_i]
    cond = joint / joint.sum()
    pmf_total = np.zeros(len(cols) * n + 1)
    for combo in itertools.product(*(range(len(net.supports[net.index(c)])) for c in others)):
        w = cond[combo] if others else 1.0
        if w == 0:
            continue
        value = dict(zip(others, combo, strict=True)) | {secret: phi_i}
        pmf = np.array([1.0])
        for c in cols:
            phi = net.supports[net.index(c)][value[c]]
            pmf = np.convolve(pmf, binom.pmf(np.arange(n + 1), n, phi))
        pmf_total += w * pmf
    if scale == 0:
        return pmf_total
    lap = np.exp(-np.abs(ys[:, None] - np.arange(pmf_total.size)[None, :]) / scale) / (2 * scale)
    return lap @ pmf_total


@pytest.mark.parametrize(
    ("strengths", "secret", "cols", "eps", "expect"),
    [
        ((0.6,), "a", ["c"], 1.0, "zero"),  # quilt {b} makes c remote
        ((0.6,), "a", ["b", "d"], 1.0, "zero"),  # b in the quilt, d remote
        ((0.6, 0.8, 0.6), "b", ["a", "c"], 1.5, "quilt"),  # {a}: Laplace(n / (ε − e(a|b)))
        ((0.9,), "b", ["a", "c"], 1.0, "trivial"),  # every quilt too influential
        ((0.7,), "c", ["c"], 0.5, "trivial"),  # the secret's own column
    ],
)
def test_exact_privacy_of_the_release(strengths, secret, cols, eps, expect):
    net = chain(*strengths)
    n = 6
    query = ColumnQuery(cols, {**{c: n for c in cols}, tuple(cols): n * len(cols)})
    mech = calibrate("apmqm", AttributeNetworkModel(net, secret, query), epsilon=eps)
    scale = mech.diagnostics["scale"]
    chosen = mech.diagnostics["per_secret"][secret]["chosen"]
    if expect == "zero":
        assert scale == 0.0
    elif expect == "quilt":
        assert chosen["quilt"] == ["a"] and 0 < scale < len(cols) * n / eps
    else:
        assert chosen["trivial"] and scale == len(cols) * n / eps
    ys = np.linspace(-40 * max(scale, 1), len(cols) * n + 40 * max(scale, 1), 4001)
    k = net.index(secret)
    laws = [output_law(net, secret, v, cols, n, scale, ys) for v in range(len(net.supports[k]))]
    for p, q in itertools.permutations(laws, 2):
        mask = (p > 0) | (q > 0)
        assert np.all(q[mask] > 0)
        assert float(np.max(np.log(p[mask] / q[mask]))) <= eps + 1e-9


# ---------------------------------------------------------------------------- bad input
class TestBadInput:
    def test_cycle(self):
        with pytest.raises(ParameterError, match=r"cycle a -> b -> a|cycle b -> a -> b"):
            ParameterNetwork(
                {"a": [0, 1], "b": [0, 1]},
                {"a": [[0.5, 0.5]] * 2, "b": [[0.5, 0.5]] * 2},
                {"a": ["b"], "b": ["a"]},
            )

    def test_rows_must_sum_to_one(self):
        with pytest.raises(
            ParameterError, match=r"cpts\['b'\] rows must sum to 1.*parents a=1.*1\.1"
        ):
            ParameterNetwork(
                {"a": [0, 1], "b": [0, 1]},
                {"a": [0.5, 0.5], "b": [[0.5, 0.5], [0.6, 0.5]]},
                {"b": ["a"]},
            )
        with pytest.raises(ParameterError, match=r"the root sums to 0\.9"):
            ParameterNetwork({"a": [0, 1]}, {"a": [0.5, 0.4]})

    def test_negative_probability(self):
        with pytest.raises(ParameterError, match=r"cpts\['a'\] must hold probabilities.*-0.5"):
            ParameterNetwork({"a": [0, 1, 2]}, {"a": [1.0, 0.5, -0.5]})

    def test_zero_probability_parameter_value(self):
        with pytest.raises(ParameterError, match="value 2 of attribute 'a' has probability 0"):
            ParameterNetwork({"a": [0, 1, 2]}, {"a": [0.5, 0.5, 0.0]})
        # A child value that no parent configuration produces.
        with pytest.raises(ParameterError, match=r"value 0\.9 of attribute 'b' has probability 0"):
            ParameterNetwork(
                {"a": [0, 1], "b": [0.1, 0.9]},
                {"a": [0.5, 0.5], "b": [[1.0, 0.0], [1.0, 0.0]]},
                {"b": ["a"]},
            )

    def test_conditional_zero_is_infinite_influence_not_nan(self):
        net = ParameterNetwork(
            {"a": [0, 1], "b": [0, 1]},
            {"a": [0.5, 0.5], "b": [[1.0, 0.0], [0.5, 0.5]]},
            {"b": ["a"]},
        )
        assert net.max_influence("a", ["b"]) == math.inf
        res = search(net, "a", ColumnQuery.count("b", n=N), 1.0)
        assert res.fell_back and res.chosen.scale == N
        assert json.dumps(to_jsonable(res.to_dict()), allow_nan=False)

    @pytest.mark.parametrize(
        ("args", "match"),
        [
            (({"a": [0, 1]}, {"a": [0.5, 0.5]}, {"a": ["zz"]}), "unknown attribute 'zz'"),
            (({"a": [0, 1]}, {"a": [0.5, 0.5]}, {"zz": ["a"]}), "unknown attribute 'zz'"),
            (({"a": [0, 1]}, {}), "no conditional probability table for 'a'"),
            (({"a": [0, 1]}, {"a": [0.5, 0.5], "q": [1.0]}), "unknown attribute 'q'"),
            (({"a": [0, 1]}, {"a": [[0.5, 0.5]]}), r"shape \(2,\)"),
            (({"a": [0, 0]}, {"a": [0.5, 0.5]}), "distinct"),
            (({"a": []}, {"a": []}), "at least one value"),
            (({}, {}), "at least one attribute"),
            (({"a": [0, 1]}, {"a": [0.5, np.nan]}), "probabilities"),
            (
                ({"a": [0, 1], "b": [0, 1]}, {"a": [0.5, 0.5], "b": [0.5, 0.5]}, {"b": ["a", "a"]}),
                "twice",
            ),
        ],
    )
    def test_network_errors(self, args, match):
        with pytest.raises(ParameterError, match=match):
            ParameterNetwork(*args)

    def test_type_errors(self):
        with pytest.raises(ParameterTypeError):
            ParameterNetwork([("a", [0, 1])], {"a": [0.5, 0.5]})
        with pytest.raises(ParameterTypeError):
            ParameterNetwork({"a": "01"}, {"a": [0.5, 0.5]})
        with pytest.raises(ParameterTypeError):
            AttributeNetworkModel(school_network(), "income", "count")

    def test_secret_and_query_must_be_in_the_network(self):
        net = school_network()
        with pytest.raises(ParameterError, match="secret 'race' is not an attribute"):
            AttributeNetworkModel(net, "race", ColumnQuery.count("height", n=N))
        with pytest.raises(ParameterError, match="query attribute 'age' is not an attribute"):
            AttributeNetworkModel(net, "income", ColumnQuery.count("age", n=N))
        with pytest.raises(ParameterError, match="secret 'race'"):
            net.max_influence("race", ["sat"])
        with pytest.raises(ParameterError, match="contains it"):
            net.max_influence("income", ["income"])
        one = ParameterNetwork({"a": [0.5], "b": [0, 1]}, {"a": [1.0], "b": [0.5, 0.5]})
        with pytest.raises(ParameterError, match="single parameter value"):
            AttributeNetworkModel(one, "a", ColumnQuery.count("b", n=N))

    def test_column_query_errors(self):
        with pytest.raises(ParameterError, match="Delta_A F for all"):
            ColumnQuery(["a", "b"], {"a": 1.0})
        with pytest.raises(ParameterError, match="monotone"):
            ColumnQuery(["a", "b"], {"a": 3.0, ("a", "b"): 2.0})
        with pytest.raises(ParameterError, match="does not read"):
            ColumnQuery(["a"], {("a", "z"): 2.0})
        with pytest.raises(ParameterError, match="sensitivities"):
            ColumnQuery(["a"], -1.0)
        with pytest.raises(ParameterError, match="low <= high"):
            ColumnQuery.means({"a": (2.0, 1.0)})
        with pytest.raises(ParameterError, match="n must be >= 1"):
            ColumnQuery.count("a", n=0)
        with pytest.raises(ParameterError, match="repeat"):
            ColumnQuery.count(["a", "a"], n=3)

    def test_column_query_sensitivities(self):
        q = ColumnQuery(["a", "b", "c"], {"a": 1.0, ("a", "b"): 2.5, ("a", "b", "c"): 4.0})
        assert q.sensitivity([]) == 0.0 and q.sensitivity(["z"]) == 0.0
        assert q.sensitivity(["a"]) == 1.0 and q.sensitivity(["b"]) == 2.5
        assert q.sensitivity(["c", "z"]) == 4.0 and not q.derived
        m = ColumnQuery.means({"h": (50.0, 80.0), "w": (80.0, 300.0)})
        assert m.dim == 2 and m.sensitivity(["h"]) == 30.0 and m.sensitivity(["h", "w"]) == 250.0
        s = ColumnQuery.sums({"h": (0, 1)}, n=7)
        assert s.sensitivity(["h"]) == 7.0 and s.derived

    def test_bad_epsilon(self):
        model = AttributeNetworkModel(school_network(), "income", ColumnQuery.count("height", n=N))
        for eps in (0.0, -1.0, float("nan"), float("inf")):
            with pytest.raises(ParameterError, match="epsilon"):
                calibrate("apmqm", model, epsilon=eps)
