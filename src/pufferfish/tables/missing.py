"""The missing cells of a released numeric column: the missing atom inside the check (issue 41).

A release of one numeric public column writes ``Y = X + noise`` for a present value and leaves a
missing cell missing: the released value lies in ``R`` plus the atom ``{missing}``. Given secret
``s`` the release has the distribution::

    Q_s(missing) = m_s,        Q_s(dy) = (1 - m_s) (P_s * K)(dy),

with ``m_s`` the rate of missing cells of ``s``, ``P_s`` the prior of its present values and ``K``
the noise. For a pair ``(a, b)`` the privacy loss is therefore::

    max( |log m_a - log m_b|,  sup_y |log((1 - m_a) / (1 - m_b)) + L_ab(y)| ),

``L_ab`` the loss of the present values alone (SPEC sec 2.1). The first term does not depend on
the noise: when it exceeds eps the release is refused, naming the rates (randomizing missingness is
not offered). The second is at most ``c + sup_y |L_ab(y)|`` with ``c`` the largest
``|log((1 - m_a) / (1 - m_b))|``, so calibrating and checking the present values at
``eps' = eps - c`` makes the whole release eps-indistinguishable: every mechanism of the registry
runs unchanged at ``eps'`` (one check-and-search path). The split costs at most ``c`` (0.037 for
the adult rates 4.14% and 7.66%) against the exact optimum of the two-sided condition.

For (eps, delta) criteria the same split holds: ``(1 - m_a) P_a(S) <= (1 - m_a)(e^{eps'} P_b(S) +
delta) <= e^{eps' + c} (1 - m_b) P_b(S) + delta`` on a set of present values, and the atom adds
``m_a <= e^eps m_b``.

Prior sets. Under a set of confidence ``gamma`` the rates get exact binomial (Clopper-Pearson)
intervals, one per secret at level ``1 - alpha / (2 k)`` (Bonferroni over the ``k`` secrets of the
pairs, half of ``alpha = 1 - gamma``); the bands or balls of the present values get the other half
(confidence ``1 - alpha / 2``, :func:`present_confidence`), so that every true prior lies in its
set with probability ``>= gamma``. With a radius given, a rate's interval is ``m_hat +- r`` (DKW: a
two-point CDF band) or ``m_hat +- r / 2`` (L1 ball). Both terms above are then taken at their
worst over the intervals; an interval reaching 0 beside a positive one gives loss ``inf``.

Rounding. Every quantity is a log of a ratio of float64 rates; each carries a relative error of a
few ulps, and ``present_epsilon`` moves ``c`` up by ``ATOM_ROUNDING`` to the safe side.

References
----------
Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial limits illustrated in
the case of the binomial. Biometrika 26(4), 404-413.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pufferfish.tables.model import SecretGroup
from pufferfish.tables.source import DataError

__all__ = ["ATOM_ROUNDING", "MissingAtom", "missing_atom", "present_confidence"]

#: Added to the offset ``c`` and to the atom's loss (nats): the float64 rounding of a few logs of
#: ratios of rates in [2^-1074, 1], far below any eps a user asks for.
ATOM_ROUNDING = 1e-12


@dataclass(frozen=True)
class MissingAtom:
    """The missing cells of one released numeric column, per secret of the pairs.

    Attributes
    ----------
    column : str
        The public column.
    rates : dict of str to float
        ``m_s``: the (weighted) share of the secret's rows whose cell is missing, in [0, 1].
    bounds : dict of str to (float, float)
        The interval of each rate the guarantee covers (``(m_s, m_s)`` for the point estimate).
    rows : dict of str to int
        Rows of each secret with the cell missing.
    interval : str
        How the intervals were made (``"point estimate"``, ``"Clopper-Pearson, level ..."``,
        ``"radius ..."``).
    atom_loss : float
        ``max |log m_a - log m_b|`` over the pairs and the intervals (the loss of the published
        value "missing" alone), in nats; ``inf`` when one side can be 0 and the other not.
    offset : float
        ``c = max |log((1 - m_a) / (1 - m_b))|`` over the pairs and the intervals, in nats.

    Notes
    -----
    See the module docstring: the whole release is eps-indistinguishable when ``atom_loss <= eps``
    and the present values pass their check at ``eps - c`` (:meth:`present_epsilon`).
    """

    column: str
    rates: dict[str, float]
    bounds: dict[str, tuple[float, float]]
    rows: dict[str, int]
    interval: str
    atom_loss: float
    offset: float

    def present_epsilon(self, epsilon: float) -> float:
        """``eps' = eps - c - ATOM_ROUNDING``, the budget of the present values.

        Parameters
        ----------
        epsilon : float
            The budget of the whole release, finite and > 0.

        Returns
        -------
        float
            In (0, epsilon).

        Raises
        ------
        DataError
            If the rates alone exceed ``epsilon`` (``atom_loss > epsilon``) or leave it nothing
            (``c >= epsilon``), naming the rates.
        """
        if self.atom_loss + ATOM_ROUNDING > epsilon:
            raise DataError(
                f"the missing cells of {self.column!r} alone have privacy loss {self.atom_loss:.6g} > "
                f"epsilon {epsilon:g} ({self.rates_text()}): publishing which rows are missing reveals "
                "the secret; drop or fill those rows, or release them as labels (--categorical)"
            )
        left = epsilon - self.offset - ATOM_ROUNDING
        if not left > 0:
            raise DataError(
                f"the missing cells of {self.column!r} take the whole budget: log((1 - m_a) / (1 - m_b)) "
                f"reaches {self.offset:.6g} >= epsilon {epsilon:g} ({self.rates_text()})"
            )
        return left

    def rates_text(self) -> str:
        """The rates (and intervals) in words, for messages."""
        parts = []
        for s, m in self.rates.items():
            lo, hi = self.bounds[s]
            within = "" if lo == hi == m else f" in [{100 * lo:.3g}%, {100 * hi:.3g}%]"
            parts.append(f"{s}: {100 * m:.3g}% missing{within}")
        return "; ".join(parts)

    def guarantee(self, epsilon: float) -> str:
        """The missing cells' part of the guarantee of a release at ``epsilon``, in words."""
        return (
            f"Missing cells of {self.column!r} (published as missing, inside the check): "
            f"{self.rates_text()} ({self.interval}); the value 'missing' alone has loss "
            f"{self.atom_loss:.6g} <= epsilon {epsilon:g}, and the present values are checked at "
            f"epsilon' = {self.present_epsilon(epsilon):.6g} = epsilon - {self.offset:.6g} (the rates' "
            "log((1 - m_a) / (1 - m_b))), so the whole column is (epsilon, S)-pufferfish private."
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "column": self.column,
            "rates": dict(self.rates),
            "bounds": {s: list(b) for s, b in self.bounds.items()},
            "rows": dict(self.rows),
            "interval": self.interval,
            "atom_loss": self.atom_loss,
            "offset": self.offset,
        }


def present_confidence(confidence: float) -> float:
    """The confidence of the present values' sets beside rate intervals: ``1 - (1 - gamma) / 2``."""
    return 1.0 - (1.0 - confidence) / 2.0


def missing_atom(
    column: str,
    present: Sequence[SecretGroup],
    absent: Mapping[str, SecretGroup],
    pairs: Sequence[tuple[str, str]],
    prior_set: tuple[str, float, float | None],
) -> MissingAtom:
    """The rates of missing cells of each secret of the pairs, their intervals, and the two terms
    of the loss (module docstring).

    Parameters
    ----------
    column : str
        The public column.
    present : sequence of SecretGroup
        Each secret's rows with the cell present (weights and squared weights).
    absent : mapping of str to SecretGroup
        Each secret's rows with the cell missing (a secret without one may be left out).
    pairs : sequence of (str, str)
        The discriminative pairs.
    prior_set : (str, float, float or None)
        ``(kind, confidence, radius)`` (:func:`pufferfish.priors.sets.check_prior_set`).

    Returns
    -------
    MissingAtom
    """
    kind, confidence, radius = prior_set
    k = len(present)
    rates, bounds, rows = {}, {}, {}
    for g in present:
        miss = absent.get(g.secret, SecretGroup(g.secret, 0, 0.0, 0.0))
        total = g.weight + miss.weight
        m = miss.weight / total if total > 0 else 0.0
        rates[g.secret], rows[g.secret] = m, miss.rows
        if kind == "none":
            bounds[g.secret] = (m, m)
        elif radius is not None:
            r = radius if kind == "dkw" else radius / 2.0
            bounds[g.secret] = (max(0.0, m - r), min(1.0, m + r))
        else:
            both = SecretGroup(g.secret, g.rows + miss.rows, total, g.weight_sq + miss.weight_sq)
            bounds[g.secret] = _clopper_pearson(m, both.effective_size, (1.0 - confidence) / (2.0 * k))
    if kind == "none":
        interval = "point estimate"
    elif radius is not None:
        interval = f"radius {radius:g}"
    else:
        interval = f"Clopper-Pearson, {100 * confidence:g}% jointly with the sets"
    atom, offset = 0.0, 0.0
    for a, b in pairs:
        (lo_a, hi_a), (lo_b, hi_b) = bounds[a], bounds[b]
        atom = max(atom, _log_ratio(hi_a, lo_b), _log_ratio(hi_b, lo_a))
        offset = max(offset, _log_ratio(1.0 - lo_a, 1.0 - hi_b), _log_ratio(1.0 - lo_b, 1.0 - hi_a))
    return MissingAtom(column, rates, bounds, rows, interval, atom, offset)


def _log_ratio(top: float, bottom: float) -> float:
    """``log(top / bottom)`` for rates in [0, 1]: 0 when both are 0, ``inf`` when only the
    bottom is."""
    if top == 0.0:
        return 0.0
    if bottom == 0.0:
        return math.inf
    return math.log(top) - math.log(bottom)


def _clopper_pearson(rate: float, n: float, alpha: float) -> tuple[float, float]:
    """The exact binomial interval of ``rate`` on ``n`` (effective) rows at two-sided level
    ``1 - alpha`` (Clopper and Pearson 1934), by the beta quantiles."""
    from scipy.stats import beta

    x = rate * n
    lo = 0.0 if x <= 0 else float(beta.ppf(alpha / 2.0, x, n - x + 1.0))
    hi = 1.0 if x >= n else float(beta.ppf(1.0 - alpha / 2.0, x + 1.0, n - x))
    return min(lo, rate), max(hi, rate)
