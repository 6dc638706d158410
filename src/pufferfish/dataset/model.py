"""The dataset-level pufferfish model: the secret is the share ``theta`` of rows with a property.

Kifer and Machanavajjhala's pufferfish framework lets a secret be a parameter of the
data-generating distribution; Zhang, Ohrimenko and Cummings (2022) call this attribute privacy and
Chen and Ohrimenko (2023) distribution privacy. Here (SPEC sec 8): ``n`` i.i.d. rows, each with
the property with probability ``theta``; the secrets are the shares ``theta_1, theta_2, ...``,
every pair of them discriminative; the adversary's prior of a statistic under ``theta`` is its
exact distribution (:func:`~pufferfish.dataset.statistic.statistic_prior`), built from the
table's conditional distributions (:class:`~pufferfish.dataset.table.PropertyTable`): a point
estimate of them, which the guarantee names.

:func:`property_scenario` gives a :class:`~pufferfish.priors.scenario.Scenario` of one statistic
that every mechanism of the registry calibrates and the exact check of SPEC sec 2.1 verifies; the
registry's ``group-dp`` reads :class:`PropertyModel` (:mod:`pufferfish.dataset.mechanisms`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pufferfish.dataset.statistic import joint_count_prior, statistic_prior
from pufferfish.dataset.table import PropertyTable, RowValues
from pufferfish.priors.joint import Metric
from pufferfish.priors.scenario import AdversaryPrior, Scenario
from pufferfish.priors.sets import PRIOR_SET_KINDS, PriorSet, dkw_radius, l1_radius

#: The name of the adversary's prior in results: the table's conditional distributions.
PRIOR_NAME = "table conditionals"

#: The mechanisms compared on a statistic by default: group DP, the additive ones, the optimum.
DATASET_MECHANISMS = (
    "group-dp", "l1", "kantorovich", "wasserstein-inf", "wasserstein-coupling", "row-composition", "relaxed",
    "optimal",
)  # fmt: skip

#: With Gaussian noise (``delta > 0``).
DATASET_GAUSSIAN_MECHANISMS = ("kantorovich-gaussian", "analytic-gaussian", "optimal")


def share_secret(theta: float) -> str:
    """The secret's name for share ``theta``: ``share=0.45`` (the shortest text of the float)."""
    return f"share={float(theta)!r}"


@dataclass(frozen=True)
class PropertyModel:
    """A dataset-level model: the table's conditionals, the shares and the number of rows.

    Parameters
    ----------
    table : PropertyTable
        From :func:`~pufferfish.dataset.table.read_property_table`.
    shares : tuple of float
        The secrets ``theta`` (>= 2, distinct, each in [0, 1]); every pair is discriminative.
    rows : int
        ``n``, the rows of the data set released (>= 1): ``--rows`` for a calibration, the
        table's rows kept for a release of it.
    prior_set : {"none", "dkw", "l1"}
        The adversary's conditionals: ``none`` (default) the point estimate, the table's rows
        with and without the property as drawn; ``dkw`` or ``l1`` every pair of conditionals in
        a confidence set around each (:meth:`row_sets`), for which only the theorems certify.
    confidence : float
        In (0, 1): the sets' confidence level, shared by the two groups (default 0.95).

    Raises
    ------
    ValueError
        If an argument breaks these rules.
    """

    table: PropertyTable
    shares: tuple[float, ...]
    rows: int
    prior_set: str = "none"
    confidence: float = 0.95
    kind: ClassVar[str] = "dataset property"

    def __post_init__(self) -> None:
        shares = tuple(float(t) for t in self.shares)
        if len(shares) < 2 or len(set(shares)) != len(shares) or not all(0.0 <= t <= 1.0 for t in shares):
            raise ValueError(f"shares must be at least two distinct values in [0, 1], got {self.shares!r}")
        if isinstance(self.rows, bool) or not isinstance(self.rows, int) or self.rows < 1:
            raise ValueError(f"rows must be an integer >= 1, got {self.rows!r}")
        if self.prior_set not in PRIOR_SET_KINDS:
            raise ValueError(f"prior_set must be one of {', '.join(PRIOR_SET_KINDS)}, got {self.prior_set!r}")
        if not (isinstance(self.confidence, float | int) and 0.0 < float(self.confidence) < 1.0):
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence!r}")
        object.__setattr__(self, "shares", shares)
        object.__setattr__(self, "confidence", float(self.confidence))

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """Every pair of shares, as secrets (:func:`share_secret`)."""
        return tuple((share_secret(a), share_secret(b)) for a, b in itertools.combinations(self.shares, 2))

    def values(self, statistic: int) -> RowValues:
        """The per-row values of statistic number ``statistic`` (0-based)."""
        return self.table.values[statistic]

    def row_change(self, statistic: int) -> float:
        """``r``: the largest change of the statistic when one row changes groups (the largest
        difference of a per-row value across the groups; with a prior set, whose priors may put
        mass on any value seen, the values' range; over ``n`` for a mean), >= 0."""
        values = self.values(statistic)
        w, wo = values.with_support, values.without_support
        r = max(float(w.max() - wo.min()), float(wo.max() - w.min()), 0.0)
        if self.prior_set != "none":
            r = values.value_range
        return r / self.rows if values.statistic.kind == "mean" else r

    def row_sets(self, statistic: int) -> tuple[PriorSet, PriorSet]:
        """The confidence sets of a row's value of statistic ``statistic`` with the property and
        without it (``prior_set`` ``dkw`` or ``l1``; ``none``: the point estimates alone).

        Both live on the values seen in either group (a value never seen lies outside every
        set). Their radii hold together at :attr:`confidence` (union bound over the two groups):
        DKW ``eta = sqrt(ln(4 / alpha) / (2 N))`` (:func:`~pufferfish.priors.sets.dkw_radius`),
        L1 (:func:`~pufferfish.priors.sets.l1_radius`), ``N`` the group's rows in the table.

        Returns
        -------
        (PriorSet, PriorSet)
            With the property, without it.
        """
        values = self.values(statistic)
        alphabet = np.union1d(values.with_support, values.without_support)
        out = []
        for support, counts in (
            (values.with_support, values.with_counts),
            (values.without_support, values.without_counts),
        ):
            center = np.zeros(alphabet.size)
            center[np.searchsorted(alphabet, support)] = counts / counts.sum()
            rows = float(counts.sum())
            if self.prior_set == "dkw":
                radius = dkw_radius(rows, self.confidence, secrets=2)
            elif self.prior_set == "l1" and alphabet.size >= 2:
                radius = l1_radius(rows, alphabet.size, self.confidence, secrets=2)
            else:
                radius = 0.0
            kind = self.prior_set if radius > 0 else "none"
            conf = self.confidence if radius > 0 else None
            out.append(PriorSet(kind, alphabet, center, radius, conf))
        return out[0], out[1]

    def prior_text(self) -> str:
        """Which conditionals a guarantee covers, for the guarantee's sentence."""
        if self.prior_set == "none":
            return f"{PRIOR_NAME}, the point estimate"
        return (
            f"every pair of conditionals in the {self.prior_set.upper()} confidence sets "
            f"(confidence {self.confidence:g}) around the table's rows with and without the property, "
            "on the values seen"
        )

    def group_dp_sensitivity(self, statistic: int) -> float:
        """How much the statistic changes when all ``n`` rows change: ``n`` times the per-row
        range for a sum or count, the range for a mean (group differential privacy)."""
        values = self.values(statistic)
        spread = values.value_range
        return spread if values.statistic.kind == "mean" else self.rows * spread

    def describe(self) -> dict[str, Any]:
        """The model for JSON output and reports."""
        t = self.table
        return {
            "model": "dataset property (Chen and Ohrimenko 2023; SPEC sec 8)",
            "property": t.prop.text,
            "shares": list(self.shares),
            "rows": self.rows,
            "table": t.description,
            "table_rows_kept": t.rows,
            "table_rows_left_out": t.rows_left_out,
            "table_share": t.share,
            "prior": "point estimate: the table's rows with and without the property, as drawn"
            if self.prior_set == "none"
            else self.prior_text(),
            "prior_set": self.prior_set,
            "confidence": self.confidence if self.prior_set != "none" else None,
        }


#: How statistics released together share product Laplace noise (:func:`noise_weights`): ``rows``
#: (default) makes the sum of squared noise scales smallest with each statistic's scale counted in
#: its own unit, the change one row can make (so a mean and a count get noise of like size
#: relative to what one row moves them); ``l2`` makes the plain squared L2 error smallest (Chen
#: and Ohrimenko's measure, which favours the statistics of smaller units).
WEIGHTINGS = ("rows", "l2")


def noise_weights(
    model: PropertyModel, statistics: Sequence[int], coefficients: Sequence[float], weighting: str = "rows"
) -> tuple[float, ...]:
    """The weights ``w_j`` of product Laplace scales ``s_j = b w_j`` for a loss whose first order is
    ``sum_j a_j / s_j`` (the ``coefficients`` ``a_j >= 0``).

    Lagrange: minimising ``sum_j (s_j / u_j)^2`` under a fixed ``sum_j a_j / s_j`` gives ``w_j^3``
    proportional to ``a_j u_j^2``. ``weighting="rows"`` takes ``u_j`` = :meth:`PropertyModel.row_change`
    (1 where it is 0), ``"l2"`` takes ``u_j = 1`` (the plain squared L2 error). A zero ``a_j``
    (the statistic's groups agree to first order) is given the largest of the others. The weights
    only shape the noise: each mechanism's guarantee is its own.

    Parameters
    ----------
    model : PropertyModel
    statistics : sequence of int
        0-based.
    coefficients : sequence of float
        ``a_j``, one per statistic.
    weighting : {"rows", "l2"}

    Returns
    -------
    tuple of float
        ``w_j > 0``, one per statistic.

    Raises
    ------
    ValueError
        If ``weighting`` is not one of :data:`WEIGHTINGS`.
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTINGS)}, got {weighting!r}")
    units = [model.row_change(k) if weighting == "rows" else 1.0 for k in statistics]
    terms = [a * (u if u > 0 else 1.0) ** 2 for a, u in zip(coefficients, units, strict=True)]
    top = max(terms) if terms and max(terms) > 0 else 1.0
    return tuple((t if t > 0 else top) ** (1.0 / 3.0) for t in terms)


def property_scenario(model: PropertyModel, statistic: int = 0) -> Scenario:
    """The scenario of one statistic: its exact distribution under each share, every pair of
    shares discriminative, one prior (:data:`PRIOR_NAME`), ``model`` attached.

    Parameters
    ----------
    model : PropertyModel
    statistic : int
        Which statistic of ``model.table`` (0-based).

    Returns
    -------
    Scenario

    Raises
    ------
    ValueError
        If the statistic's exact distribution cannot be computed
        (:func:`~pufferfish.dataset.statistic.statistic_prior`).
    """
    values = model.values(statistic)
    conditionals = {share_secret(t): statistic_prior(values, t, model.rows) for t in model.shares}
    prior = AdversaryPrior(PRIOR_NAME, conditionals)
    return Scenario(model.pairs, (prior,), model=StatisticModel(model, (statistic,)))


#: Most pairs of counts ``(n + 1)^2`` of a joint scenario (:func:`joint_scenario`): the exact
#: product check reads every pair, and the joint law takes ``O(n^3)`` terms (n <= 199 here).
MAX_JOINT_POINTS = 40_000


def joint_scenario(model: PropertyModel) -> Scenario | None:
    """The scenario of two count statistics released together: their exact joint distribution
    under each share (:func:`~pufferfish.dataset.statistic.joint_count_prior`), every pair of
    shares discriminative, the L1 metric with unit 1 on each count; product Laplace noise of
    scale ``b`` adds ``Laplace(b)`` to each, and the registry checks it exactly
    (:func:`pufferfish.loss.product.product_laplace_loss`).

    Returns
    -------
    Scenario or None
        None unless the table has two count statistics
        (:attr:`~pufferfish.dataset.table.PropertyTable.pair_classes`) and ``(n + 1)^2 <=``
        :data:`MAX_JOINT_POINTS`.
    """
    classes = model.table.pair_classes
    if classes is None or (model.rows + 1) ** 2 > MAX_JOINT_POINTS:
        return None
    conditionals = {share_secret(t): joint_count_prior(classes, t, model.rows) for t in model.shares}
    prior = AdversaryPrior(PRIOR_NAME, conditionals)
    return Scenario(model.pairs, (prior,), metric=Metric((1.0, 1.0)), model=StatisticModel(model, (0, 1)))


@dataclass(frozen=True)
class StatisticModel:
    """A scenario's model (:attr:`~pufferfish.priors.scenario.Scenario.model`): the
    :class:`PropertyModel` and which of its statistics the scenario releases; its ``kind``
    dispatches the registry's model mechanisms (:mod:`pufferfish.dataset.mechanisms`).

    Attributes
    ----------
    model : PropertyModel
    statistics : tuple of int
        0-based indices into ``model.table.values``: one, or the two of a joint scenario.
    """

    model: PropertyModel
    statistics: tuple[int, ...]
    kind: ClassVar[str] = PropertyModel.kind
