"""Mean events: hide which range the dataset's average of a column falls in.

Zhang, Ohrimenko & Cummings (2022, §3, Def. 4) motivate secrets that are events about a
function of an attribute over all records: "the average income of individuals in a
dataset being below or above $50K". With :class:`MeanGrid` as the measured quantity, an
:class:`~distpriv.modeling.secret_events.EventSecret` hides which of several ranges
[low, high] of the average of a row expression the released dataset's average lies in::

    EventSecret(MeanGrid("age"), events=[(36, 38), (41, 43)])

**The grid.** A dataset's average is (for a real-valued column) a continuous quantity, so
an event allows a continuum of values. Each event [low, high] is represented by the grid
low, low + h, …, high (h = ``step``; the last step may be shorter so that both ends are on
the grid), each grid value is modelled as a :class:`~distpriv.modeling.secret_mean.MeanSecret`
value (exponential tilting + Gaussian conditioning, :mod:`distpriv.modeling.model_mean`,
with its population layer), and the noise is calibrated on every grid value of one event
against every grid value of the other (joint convexity of the hockey-stick divergence:
:mod:`distpriv.modeling.secret_events`). A mean *between* two grid values is covered by the
premise of docs/guarantees.md ("Mean events"): its law lies between its neighbours' laws —
it is a mixture of them (then joint convexity covers it exactly), or it is Gaussian with the
common covariance and a mean on the segment between theirs (then the Mahalanobis distance to
any law of the other event is a convex function of the position on the segment, so the
largest δ is at a grid value). The model measures the departure from that premise at every
step's midpoint (``diagnostics["event_grid"]``, :mod:`distpriv.modeling.model_mean_events`),
and the tests measure the released δ on real subsets whose average falls anywhere in the
events.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ParameterError, ParameterTypeError
from ..util.validation import check_real
from .expressions import ParsedExpression, SqlTextHolder, parse_expression
from .secret_mean import MeanSecret

__all__ = ["DEFAULT_INTERVALS", "MAX_GRID_VALUES", "MeanGrid"]

# Grid steps per event when no step is given: 5 values per event, 25 cross pairs per
# pair of events (the premise's departure at the midpoints is reported; tests measure it).
DEFAULT_INTERVALS = 4
# More values per event would make the cross pairs (quadratic) and the tilts too many.
MAX_GRID_VALUES = 41
_SLACK = 1e-9


@dataclass(frozen=True, init=False)
class MeanGrid(SqlTextHolder):
    """The average of a row expression, as the measured quantity of an event secret.

    Parameters
    ----------
    expression : str
        A DuckDB SQL row expression with a numeric value (validated as for
        :class:`~distpriv.modeling.secret_mean.MeanSecret`; never run as raw text).
    step : float, optional
        h > 0, the spacing of each event's grid of averages. Default: a quarter of the
        event's width (5 grid values per event).

    Examples
    --------
    >>> MeanGrid("age", step=0.5).event_grid(36, 38, 100)
    (36.0, 36.5, 37.0, 37.5, 38.0)
    >>> MeanGrid("age").ledger_key()
    'mean:age'
    """

    expression: str
    step: float | None
    _parsed: ParsedExpression

    def __init__(self, expression: str, *, step: float | None = None) -> None:
        if not isinstance(expression, str) or not expression.strip():
            raise ParameterTypeError(
                f"expression must be a non-empty SQL row expression, got {expression!r}"
            )
        parsed = parse_expression(expression, what="secret expression", kind="scalar")
        h = None if step is None else check_real(step, "step", low=0.0, low_inclusive=False)
        object.__setattr__(self, "expression", expression)
        object.__setattr__(self, "step", h)
        object.__setattr__(self, "_parsed", parsed)

    def event_grid(self, low: float, high: float, subset_size: int) -> tuple[float, ...]:
        """The grid of one event [low, high]: low, low + h, …, and high (module docstring).

        ``subset_size`` is not used: an average is not confined to a lattice of 1/n
        (columns with real values); the grid is the premise's, not the data's.

        Raises
        ------
        ParameterError
            A step not below the event's width (the grid would have one value), or more
            than :data:`MAX_GRID_VALUES` values.
        """
        width = high - low
        h = width / DEFAULT_INTERVALS if self.step is None else self.step
        if h >= width - _SLACK * max(1.0, abs(width)):
            raise ParameterError(
                f"event [{low:g}, {high:g}] with step {h:g} has a grid of one value (its "
                "ends are closer than a step): use a smaller step or a wider range"
            )
        k = math.floor(width / h + _SLACK)
        if k + 1 > MAX_GRID_VALUES:
            raise ParameterError(
                f"event [{low:g}, {high:g}] with step {h:g} has more than {MAX_GRID_VALUES} "
                "grid values (every value of one event is paired with every value of the "
                "other): use a larger step"
            )
        # 12 significant digits: 36 + 3 × 0.1 is shown as 36.3, not 36.300000000000004.
        vals = [float(f"{low + i * h:.12g}") for i in range(k + 1)]
        vals[0] = low
        if high - vals[-1] > _SLACK * max(1.0, abs(high)):
            vals.append(high)
        else:
            vals[-1] = high
        if len(vals) > MAX_GRID_VALUES:
            raise ParameterError(
                f"event [{low:g}, {high:g}] with step {h:g} has more than {MAX_GRID_VALUES} "
                "grid values (every value of one event is paired with every value of the "
                "other): use a larger step"
            )
        return tuple(float(v) for v in vals)

    def with_values(
        self, values: Sequence[float], pairs: Sequence[tuple[float, float]]
    ) -> MeanSecret:
        """The value secret the noise is calibrated on: the grid values, the cross pairs."""
        return MeanSecret(self.expression, values=list(values), pairs=[list(p) for p in pairs])

    def describe(self) -> str:
        """What is measured, in words."""
        return f"the average of {self.expression}"

    def ledger_key(self) -> str:
        """``"mean:" + expression``, as :class:`MeanSecret`: releases about the same average
        compose in the ledger."""
        return "mean:" + self.expression
