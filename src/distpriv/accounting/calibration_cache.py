"""Results shared by the calibrations of one call (``auto`` at hundreds of statistics).

``mechanism = "auto"`` calibrates every registered mechanism on the same model, and the
exact calibrations repeat much of each other's work: apgm searches the same noise family
as eigm from the same start, optimal-g-full runs optimal-g's whole exact calibration, every
search rebuilds the population confidence set's worst members for noises it has seen
before, and each member's covariances (which do not depend on the noise) are
eigen-decomposed again for every noise. Within :func:`shared_calibration` the pure
functions behind that work remember their answers:

* :func:`distpriv.population.exact.pair_deltas` — keyed by the content of the model (means,
  covariances, pairs), the noise covariance, ε and the accuracy asked;
* :func:`distpriv.population.confidence.population_model` — keyed by the model's content, its
  moments' uncertainty, β and the noise; the members' noise-free parts (corner covariances
  and their clipping, the gap errors' square roots) once per model and β;
* :func:`distpriv.central.optimal.calibrate_optimal` — keyed by the model's content, ε, δ,
  the calibration and the weights;
* optimal-g's exact search on the population set (``central/exact_calibration.py``, which
  optimal-g-full repeats for its candidates) — keyed by the model's content and
  uncertainty, ε, δ, β and the papers' noises the search starts from.

Each is a deterministic function of exactly what its key holds (no randomness, no state),
so a remembered answer is the one the call would compute, bit for bit, and every
guarantee is still the accountant's own verdict on the published noise
(``tests/central/test_calibration_cache.py`` compares each calibration with and without
the cache). Keys are BLAKE2 digests of the arrays' bytes, shapes and dtypes; nothing is
remembered outside the ``with`` block (no state between calls, no growth across calls).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import numpy as np

from ..util.context import run_inside

__all__ = [
    "CalibrationCache",
    "active_cache",
    "fingerprint",
    "shared_calibration",
    "sharing_calibration",
]

# The worst members of the population set are m × m matrices per pair and corner (k = 3,
# m = 500: 96 MB per noise); those kept are bounded by their bytes (least recently used
# dropped first). Everything else kept is small (profiles, a few vectors).
_MEMBER_BYTES = 512 * 2**20


def fingerprint(*parts: Any) -> str:
    """A digest of arrays (bytes, shape, dtype) and plain values, in order."""
    h = hashlib.blake2b(digest_size=20)
    for p in parts:
        if isinstance(p, np.ndarray):
            a = np.ascontiguousarray(p)
            h.update(f"a{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        elif p is None:
            h.update(b"n")
        else:
            h.update(f"v{type(p).__name__}:{p!r}".encode())
        h.update(b"|")
    return h.hexdigest()


def uncertainty_parts(unc: Any) -> tuple[Any, ...]:
    """Every field of a model's uncertainty (MomentUncertainty, BootstrapUncertainty, …),
    flat, for :func:`fingerprint` (arrays at the top level, so they are hashed whole)."""
    if unc is None:
        return (None,)
    return (type(unc).__name__, *(getattr(unc, f.name) for f in dataclasses.fields(unc)))


def model_fingerprint(model: Any) -> str:
    """Digest of what a pair check depends on: means, covariances and pairs."""
    return fingerprint(
        np.asarray(model.means), np.asarray(model.covariances), tuple(map(tuple, model.pairs))
    )


class CalibrationCache:
    """What one :func:`shared_calibration` block remembers (see the module notes)."""

    def __init__(self) -> None:
        self.pair_checks: dict[Hashable, Any] = {}
        self.members: OrderedDict[Hashable, Any] = OrderedDict()
        self.member_bytes = 0
        self.corners: dict[Hashable, Any] = {}
        self.optimal: dict[Hashable, Any] = {}
        self.exact_noise: dict[Hashable, Any] = {}
        # Models made here (population members): id -> (model, fingerprint), so that they
        # are not hashed again; held while they are in ``members``.
        self.known: dict[int, tuple[Any, str]] = {}
        self.hits = 0
        self.misses = 0

    def model_key(self, model: Any) -> str:
        """The model's content digest (remembered for the members made here)."""
        known = self.known.get(id(model))
        if known is not None and known[0] is model:
            return known[1]
        return model_fingerprint(model)

    def get(self, table: dict[Hashable, Any], key: Hashable) -> Any:
        value = table.get(key)
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def get_members(self, key: Hashable) -> Any:
        value = self.members.get(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        self.members.move_to_end(key)
        return value

    def put_members(self, key: Hashable, model: Any) -> None:
        size = int(np.asarray(model.covariances).nbytes)
        self.members[key] = model
        self.member_bytes += size
        self.known[id(model)] = (model, model_fingerprint(model))
        while self.member_bytes > _MEMBER_BYTES and len(self.members) > 1:
            _, old = self.members.popitem(last=False)
            self.member_bytes -= int(np.asarray(old.covariances).nbytes)
            self.known.pop(id(old), None)


_ACTIVE: ContextVar[CalibrationCache | None] = ContextVar(
    "distpriv_calibration_cache", default=None
)


def active_cache() -> CalibrationCache | None:
    """The cache of the enclosing :func:`shared_calibration` block, or None."""
    return _ACTIVE.get()


@contextmanager
def shared_calibration() -> Iterator[CalibrationCache]:
    """Within this block the calibrations share their pure intermediate results.

    Re-entrant: an inner block uses the outer one's cache. Nothing outlives the outermost
    block.
    """
    outer = _ACTIVE.get()
    if outer is not None:
        yield outer
        return
    cache = CalibrationCache()
    token = _ACTIVE.set(cache)
    try:
        yield cache
    finally:
        _ACTIVE.reset(token)


F = TypeVar("F", bound=Callable[..., Any])


def sharing_calibration(fn: F) -> F:
    """Decorator: ``fn`` runs inside :func:`shared_calibration`."""
    # Looked up at each call (not bound now), so that replacing the module's function works.
    return run_inside(lambda: shared_calibration(), fn)
