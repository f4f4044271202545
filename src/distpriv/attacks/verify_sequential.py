"""The data-level check drawing more resampled datasets until it decides.

:func:`verify_on_data` checks δ(ε) of f_θ + Z on a fixed number of resampled datasets; with
counted sets alone, at 20,000 per value it certified an under-noised mechanism only from
about 14–23× the claimed δ = 1e-3. :func:`verify_sequential` draws them on a geometric
schedule (N₁, 2N₁, 4N₁, … up to a sample budget) and looks after each step: it stops as soon as
the certified lower bound exceeds the claim (``violation``), or every direction's upper
confidence bound of the chosen set's P_i(S) − e^ε P_j(S) falls below it (those sets cannot
show an excess), or the sample or time budget is reached.

Streamed evaluation. The first half-look (``first // 2`` datasets per value) chooses the
sets — its fit and train splits, as in :func:`verify_on_data` — and is kept; every other
dataset is an evaluation draw, drawn, noised and counted in batches of at most ``batch``
datasets per value (:class:`~distpriv.attacks.verify_stream.Tally`), then dropped. So the
check's memory is that of the chosen sets plus one batch, whatever the sample budget (at
1,000 statistics of 1,000 rows the old check, which held every look's datasets, needed
2.8 GiB at 80,000 per value). Look k counts the N_k − first/2 evaluation datasets drawn so
far (look 1: first/2, as before; the last: almost the whole budget, against half of it
when every look re-split all its datasets). With Gaussian noise one of the sets is the
expected-hit half-space (:mod:`distpriv.attacks.verify_expected`): a Rao–Blackwellised
count with an empirical-Bernstein bound, which certifies 3× and 5× violations of the
Gaussian benchmark within 40,000–80,000 datasets per value.

Validity under sequential testing. The sets are fixed before any evaluation draw, and the
evaluation draws are i.i.d., so at every look each set's bound on its P_a(S) − e^ε P_b(S)
≤ δ holds at its level; every look's levels are divided by K, the number of looks the
sample budget allows (Bonferroni over looks). The event "some look's certified bound
exceeds the true δ" then has probability at most Σ_k (1 − confidence)/K = 1 − confidence,
whatever the stopping rule and whether the time budget ends the check early (stopping
early only spends less). A geometric schedule keeps K small (log₂ of budget / N₁, plus
one), so the price of looking is a factor K in α, not in n.

Early stop (``early_stop=True``, the default of ``distpriv verify``: a fast cold check).
The check draws more only while it is *suspicious*: it stops after any look (but the
last) that is clear, i.e. unless its verdict is ``inconclusive`` (an estimate a standard
error above the claim), some direction's point estimate of the chosen set's
P_i(S) − e^ε P_j(S) exceeds twice the claimed δ (:data:`_SUSPICIOUS`), or the lattice
decoder applies (a decoded release can hide an excess that only the sets of lattice points
find with more draws); at a later look, more datasets and a smaller
standard error, the estimate must be at most the claim itself
(:data:`_LATER_SUSPICIOUS`). A first look that is suspicious by chance (on a release
calibrated exactly at its claim, about one run in three: the largest estimate over
directions is biased upward) used to spend the whole budget; now a later clear look ends
it. The certified bound keeps its confidence (Bonferroni
over the looks the budget allows holds for any stopping rule); what the early stop costs
is power, against a violation whose estimate at some look falls below the look's bound.
Measured (``benchmarks/bench_verify_power.py --early-stop``, first look 20,000, budget
160,000; docs/guarantees.md has the table): the same share of 3×, 5× and 10× violations
certified as without it in 10 runs each, while a correct release ends after one look in
most runs — it is not free in general: a violation near the budget's detectable δ whose
looks happen to look clean is no longer pursued.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..central import CalibratedMechanism
from ..errors import ParameterError, ParameterTypeError
from ..querymodel import SampledQueryModel
from ..util.validation import check_positive_int, check_real, check_rng
from ._verify_stats import _noise_frame, _split
from .verify import _check_inputs, _conclude, _decoding
from .verify_results import DataLevelCheck
from .verify_stream import Tally, make_plans
from .verify_stream import null_control as _null

__all__ = ["look_schedule", "verify_sequential"]


# Early stop: a first look whose largest estimate exceeds this multiple of the claimed δ is
# suspicious and the check draws more (module docstring). At the CLI's first look (20,000
# datasets per value) the estimate's standard error is about the claim itself, and the
# budget's last look detects about 4× the claim: a violation the budget could certify shows
# a first-look estimate above 2× nearly always, while a release at or below its claim (whose
# largest estimate over directions is biased upward) stays below it most of the time.
_SUSPICIOUS = 2.0


# A look is expected to cost about this many times the previous one (twice the data, plus
# the drawing); the time budget stops before a look that would not fit.
_GROWTH_COST = 2.2


def look_schedule(first: int, max_samples: int) -> tuple[int, ...]:
    """Datasets per value at each look: first, 2·first, 4·first, …, max_samples.

    Parameters
    ----------
    first : int
        Datasets per value at the first look (≥ 6).
    max_samples : int
        The sample budget (≥ ``first``): the last look uses exactly this many.

    Returns
    -------
    tuple of int
        Strictly increasing sizes; its length K is the Bonferroni factor over looks.
    """
    n1 = check_positive_int(first, "first", minimum=6)
    cap = check_positive_int(max_samples, "max_samples", minimum=n1)
    sizes = [n1]
    while sizes[-1] < cap:
        sizes.append(min(cap, 2 * sizes[-1]))
    return tuple(sizes)


def _as_arrays(got: object) -> tuple[list[np.ndarray], list[str], list[tuple[int, int]]]:
    """The draw callable's output as float arrays, with labels and pairs."""
    if isinstance(got, SampledQueryModel):
        arrays = [np.asarray(s, dtype=np.float64) for s in got.samples]
        return arrays, [str(x) for x in got.labels], [(int(p[0]), int(p[1])) for p in got.pairs]
    if isinstance(got, Sequence) and all(isinstance(s, np.ndarray) for s in got):
        model = SampledQueryModel(list(got))
        return _as_arrays(model)
    raise ParameterTypeError(
        "draw must return a SampledQueryModel or a list of arrays (one per value of the "
        f"secret), got {type(got).__name__}"
    )


# At a later look (more datasets, a smaller standard error) the check stops only on an
# estimate at most this multiple of the claim: a first look suspicious by chance is then
# usually followed by a clear one, while a violation whose chosen set shows an estimate
# between the claim and twice it goes on (module docstring).
_LATER_SUSPICIOUS = 1.0


def _clear(check: DataLevelCheck, factor: float = _SUSPICIOUS) -> bool:
    """A look shows no sign worth more draws (``early_stop``, module docstring):
    verdict ``no evidence``, every direction's estimate at most :data:`_SUSPICIOUS` × the
    claim, and no lattice decoder (``recovery`` is None without one)."""
    return (
        check.verdict == "no evidence"
        and check.delta_estimate <= factor * check.target_delta
        and check.recovery is None
    )


def verify_sequential(
    draw: Callable[[int, np.random.Generator], Any],
    mechanism: CalibratedMechanism,
    *,
    rng: np.random.Generator | int | None = None,
    first: int = 20_000,
    max_samples: int = 320_000,
    max_seconds: float | None = 300.0,
    confidence: float = 0.95,
    null_control: bool = False,
    early_stop: bool = False,
    batch: int | None = None,
) -> DataLevelCheck:
    """The data-level check with more datasets drawn until it decides or hits a budget.

    See the module docstring for the schedule, the stopping rule, the streamed evaluation
    and why the confidence holds under sequential testing.

    Parameters
    ----------
    draw : callable ``draw(n, rng)``
        Returns n new resampled datasets per value of the secret: a
        :class:`~distpriv.SampledQueryModel` or a list of arrays of shape (n, m), in the
        same order of values on every call (e.g. ``model_query(..., method="montecarlo",
        n_samples=n, rng=rng).to_sampled()``). Called with at most ``batch`` at a time.
    mechanism : CalibratedMechanism
    rng : int, Generator or None
        Two independent streams are spawned from it: one passed to ``draw``, one for the
        splits and the noise.
    first : int
        Datasets per value at the first look (≥ 12): half choose the sets (fit and train
        splits), half are the first evaluation draws.
    max_samples : int
        Sample budget: datasets per value at the last possible look.
    max_seconds : float or None
        Time budget: no look starts that would be expected to end after it (the expected
        cost of a look is :data:`_GROWTH_COST` × the previous one). None: no time budget.
        Ends the check early only; the confidence does not depend on it.
    confidence : float
        Joint confidence of the certified lower bound over pairs, directions, sets and
        every look the sample budget allows.
    null_control : bool
        Run the null control on the datasets that chose the sets.
    early_stop : bool
        Stop after any look that is not suspicious (an estimate above the claim, or a
        lattice decoder applies; module docstring): cheaper on a clearly correct
        mechanism, less power against a violation a look does not flag. The confidence
        of the certified bound does not depend on it.
    batch : int or None
        Most datasets per value drawn and held at once (the memory bound: about
        ``batch`` × values × (rows + statistics) × 16 bytes, plus the first half-look that
        chooses the sets); None: ``first``. The result does not depend on it when ``draw``
        and the noise sampler are stream-consistent (drawing k then l equals drawing
        k + l): the counts are sums over datasets.

    Returns
    -------
    DataLevelCheck
        The last look's check, with ``looks``, ``max_looks``, ``n_samples`` and
        ``stopped``.

    Raises
    ------
    ParameterTypeError, ParameterError
        Bad ``draw`` output, budgets, batch or confidence; mismatched dimensions.
    """
    if not callable(draw):
        raise ParameterTypeError(f"draw must be callable, got {type(draw).__name__}")
    sizes = look_schedule(first, max_samples)
    if sizes[0] < 12:
        raise ParameterError(
            f"first must be at least 12 (6 datasets per value choose the sets, 6 evaluate "
            f"them), got {first}"
        )
    budget = None
    if max_seconds is not None:
        budget = check_real(max_seconds, "max_seconds", low=0.0, low_inclusive=False)
    step = sizes[0] if batch is None else check_positive_int(batch, "batch")
    gen = check_rng(rng)
    # Separate streams: with a stream-consistent draw the batch size changes nothing.
    g_draw, g_noise = gen.spawn(2)
    start = time.perf_counter()
    n_sel = sizes[0] // 2
    sel, labels, pairs = _drawn(draw, n_sel, step, g_draw, None)
    _check_inputs(SampledQueryModel(sel), mechanism, 2, confidence)
    conf = float(confidence)
    eps = float(mechanism.guarantee.epsilon)
    target = float(mechanism.guarantee.delta)
    frame = _noise_frame(mechanism)
    sp = _split(sel, labels, 0, mechanism, g_noise)
    # The decoder's float-error bound needs the statistics' magnitude: twice the largest
    # seen while choosing the sets covers the evaluation draws' (a decoding error would
    # cost power only: the sets stay fixed functions of the release).
    decoding = _decoding(mechanism, sp.fit, 2.0 * np.max(np.abs(np.vstack(sel)), axis=0))
    tally = Tally(make_plans(sp, pairs, mechanism, frame, decoding.decoder, eps), math.exp(eps))
    k, last_cost, check, stopped = 0, 0.0, None, ""
    while True:
        t0 = time.perf_counter()
        need = sizes[k] - n_sel - tally.n[0]
        while need > 0:
            f, _, _ = _drawn(draw, min(step, need), step, g_draw, sel)
            noisy = [x + mechanism.noise.sample(x.shape[0], g_noise) for x in f]
            tally.add(noisy, f, decoding.decoder)
            need -= f[0].shape[0]
        check = _conclude(tally, labels, mechanism, frame, decoding, conf, len(sizes), None)
        last_cost = time.perf_counter() - t0
        if check.verdict == "violation":
            stopped = "certified"
        elif all(p.interval[1] < target for p in check.per_pair):
            stopped = "below the target"
        elif (
            early_stop
            and k + 1 < len(sizes)
            and _clear(check, _SUSPICIOUS if k == 0 else _LATER_SUSPICIOUS)
        ):
            stopped = "first look clear" if k == 0 else f"look {k + 1} clear"
        elif k + 1 == len(sizes):
            stopped = "sample budget"
        elif budget is not None and (
            time.perf_counter() - start + _GROWTH_COST * last_cost > budget
        ):
            stopped = "time budget"
        if stopped:
            break
        k += 1
    if check is None:  # pragma: no cover - the loop always runs at least one look
        raise RuntimeError("verify_sequential: no look was made")
    null = None
    if null_control and frame.kind == "gaussian":
        looks = len(sizes)
        null = _null(sel, pairs, labels, mechanism, frame, n_sel // 2, eps, conf, looks, g_noise)
    note = (
        f"sequential check: {k + 1} of at most {len(sizes)} looks (datasets per value "
        f"{', '.join(str(s) for s in sizes)}), stopped: {stopped}; the sets were chosen on "
        f"{n_sel} datasets per value, the other {check.n_samples - n_sel} were evaluated in "
        f"batches of at most {step}; every look's bounds are at level {1 - conf:g}/"
        f"{len(sizes)} (Bonferroni over the looks the sample budget allows), so delta_lower "
        f"is certified at joint confidence {conf:g} wherever it stopped"
    )
    return dataclasses.replace(
        check,
        null=null,
        looks=k + 1,
        max_looks=len(sizes),
        stopped=stopped,
        notes=(*check.notes, note),
    )


def _drawn(
    draw: Callable[[int, np.random.Generator], Any],
    count: int,
    step: int,
    gen: np.random.Generator,
    like: list[np.ndarray] | None,
) -> tuple[list[np.ndarray], list[str], list[tuple[int, int]]]:
    """``count`` datasets per value from ``draw``, at most ``step`` per call, checked
    against ``like`` (the first draws: same number of values and of statistics)."""
    parts: list[list[np.ndarray]] = []
    labels: list[str] = []
    pairs: list[tuple[int, int]] = []
    got = 0
    while got < count:
        want = min(step, count - got)
        arrays, labels, pairs = _as_arrays(draw(want, gen))
        n = min(int(a.shape[0]) for a in arrays)
        if n < want:
            raise ParameterError(f"draw returned {n} datasets per value, {want} needed")
        ref = like if like is not None else (parts[0] if parts else arrays)
        if len(arrays) != len(ref) or any(
            a.shape[1:] != r.shape[1:] for a, r in zip(arrays, ref, strict=True)
        ):
            raise ParameterError("draw returned a different number of values or statistics")
        parts.append([a[:want] for a in arrays])
        got += want
    out = [np.concatenate(col) if len(col) > 1 else col[0] for col in zip(*parts, strict=True)]
    return out, labels, pairs
