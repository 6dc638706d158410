"""Release a table's statistics with noise that keeps the share of rows with a property secret.

The model's ``n`` is the table's rows kept (:class:`~pufferfish.dataset.table.PropertyTable`).
One statistic: the registry's mechanism (default ``optimal``) calibrated on its exact priors and
checked exactly, then checked again as the secure sampler draws it
(:func:`~pufferfish.pipeline.draws.drawn_scale`). Two counts of a small table: the registry's
mechanism on their exact joint distribution, checked by the product check
(:func:`~pufferfish.dataset.model.joint_scenario`). Other statistics together, or one whose exact
distribution is too large: product Laplace noise certified by ``row-composition`` (one row's exact
loss composed through the binomial count, :mod:`pufferfish.dataset.composition`), or on request by
``wasserstein-coupling`` (:mod:`pufferfish.dataset.coupling`, seed 002 Thm 1).

What leaves the process (:meth:`PropertyRelease.to_dict`): the noisy statistics, their noise, the
model's public parameters (the property, the shares, ``n``) and the guarantee; never the table's
own statistics, its share of rows with the property (the secret itself) or its rows left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pufferfish._checks import check_epsilon
from pufferfish.calibration import Calibration
from pufferfish.calibration.registry import check_mechanisms, run_comparison
from pufferfish.dataset.calibrate import property_request
from pufferfish.dataset.composition import RowComposition, composition_scales
from pufferfish.dataset.coupling import VectorScale, vector_scale
from pufferfish.dataset.model import (
    MAX_JOINT_POINTS,
    PropertyModel,
    joint_scenario,
    property_scenario,
)
from pufferfish.dataset.spec import PropertySpec, StatisticSpec
from pufferfish.dataset.statistic import StatisticTooLarge
from pufferfish.dataset.table import read_property_table
from pufferfish.noise.samplers import add_gaussian, add_laplace, grid_exponent
from pufferfish.priors.scenario import Scenario

#: First safety factor on the scales of several statistics (:func:`_safe_scales`): the secure
#: sampler's rounding can move two coupled values apart by a grid step each.
VECTOR_SAFETY = 1.0 + 2.0**-20


@dataclass(frozen=True)
class PropertyRelease:
    """Released statistics of a table and the guarantee they carry.

    Attributes
    ----------
    model : PropertyModel
        ``rows`` = the table's rows kept.
    values : tuple of float
        The noisy statistics, one per ``model.table.values``.
    scales : tuple of float
        The noise scale each was drawn with (Laplace ``b`` or Gaussian ``sigma``).
    mechanism : str
        A registry name: the registry's calibration checked exactly, or ``row-composition`` /
        ``wasserstein-coupling`` (a theorem; several statistics, or one too large to compute).
    epsilon, delta : float
    noise : {"laplace", "gaussian"}
    checked : str
        What the guarantee rests on: the exact check's loss, or the theorem's bound.
    sampler : dict
        How the noise was drawn (secure or seeded).
    scenario : Scenario or None
        One statistic checked exactly: the scenario of its exact priors (for the report).
    """

    model: PropertyModel
    values: tuple[float, ...]
    scales: tuple[float, ...]
    mechanism: str
    epsilon: float
    delta: float
    noise: str
    checked: str
    sampler: dict[str, Any]
    scenario: Scenario | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """What may be published: the noisy statistics, the noise, the public parameters and the
        guarantee (nothing of the table's own values or share)."""
        t = self.model.table
        return {
            "released": [
                {"query": v.statistic.text, "value": x, "noise": self.noise, "scale": s}
                for v, x, s in zip(t.values, self.values, self.scales, strict=True)
            ],
            "property": t.prop.text,
            "shares": list(self.model.shares),
            "rows": self.model.rows,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "guarantee": (
                f"({self.epsilon:g}, {self.delta:g})-pufferfish privacy of the share of rows with "
                f"{t.prop.text}: no pair of the shares {', '.join(f'{s:g}' for s in self.model.shares)} "
                f"is told apart beyond e^eps, for n = {self.model.rows} i.i.d. rows drawn from the "
                f"table's rows with and without the property ({self.model.prior_text()})"
            ),
            "checked": self.checked,
            "sampler": self.sampler,
            "public": "n (the rows kept) is published as the model's parameter; the table's own share "
            "and statistics are not",
        }


def release_property(
    data: Any,
    *,
    property: str | PropertySpec,
    epsilon: float,
    queries: str | Sequence[str | StatisticSpec] = "count",
    shares: str | Sequence[float] = (0.45, 0.55),
    mechanism: str | None = None,
    delta: float = 0.0,
    noise: str = "laplace",
    weights: str = "rows",
    prior_set: str = "none",
    confidence: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> PropertyRelease:
    """Release ``data``'s statistics under the dataset-level guarantee (module docstring).

    Parameters
    ----------
    data : str, pathlib.Path or pandas.DataFrame
        The table released (shipped ``adult``, CSV, Parquet).
    property, queries, shares, delta, noise, weights, prior_set, confidence
        As :func:`~pufferfish.dataset.calibrate.calibrate_property`; ``n`` is the table's rows kept.
        With a prior set the statistics are released by ``row-composition``.
    epsilon : float
        Finite and > 0 (nats).
    mechanism : str, optional
        One statistic: a registry name (default ``optimal``, the smallest scale passing the exact
        check on the statistic's exact distribution; when the sum's lattice is too large,
        :class:`~pufferfish.dataset.statistic.StatisticTooLarge`, ``row-composition``).
        ``row-composition`` and ``wasserstein-coupling`` need no exact distribution: their scales
        rest on a theorem (:mod:`pufferfish.dataset.composition`, :mod:`pufferfish.dataset.coupling`).
        Several statistics (Laplace noise, pure eps): two counts of a small table
        (:func:`~pufferfish.dataset.model.joint_scenario`) by a registry name (default ``optimal``)
        checked exactly on their joint distribution; otherwise ``row-composition`` (default) or
        ``wasserstein-coupling``.
    rng : numpy.random.Generator, int or None
        None (default): the secure sampler. A seed or Generator: NumPy's, **not secure**.

    Returns
    -------
    PropertyRelease

    Raises
    ------
    ValueError
        On a bad argument; if the mechanism does not apply or fails its check (the reason); for
        several statistics with another mechanism, Gaussian noise or ``delta > 0``.
    StatisticTooLarge
        If the statistic's exact distribution is too large for the mechanism asked for.
    DataError
        If the table cannot be read or does not fit the property and queries.
    """
    eps = check_epsilon(epsilon)
    named = [mechanism] if mechanism is not None else None
    request = property_request(
        data, property, eps, queries, shares, None, delta, noise, named, weights, prior_set, confidence
    )
    if len(request.statistics) > 1 and (request.noise != "laplace" or request.delta > 0):
        raise ValueError(
            "several statistics are released together with Laplace noise and delta = 0 (two counts: "
            "checked exactly on their joint law; otherwise row-composition), "
            f"got noise {request.noise}, delta {request.delta:g}"
        )
    table = read_property_table(request.data, request.prop, request.statistics)
    model = PropertyModel(table, request.shares, table.rows, request.prior_set, request.confidence)
    plan = plan_release(
        model, eps, mechanism, request.delta, request.noise, secure=rng is None, weights=request.weights
    )
    checked = plan.checked
    if rng is not None or plan.theorem is not None:  # as calibrated (and drawn)
        scales = plan.scales
    elif plan.scenario is not None:  # one statistic: checked again as the sampler draws it
        from pufferfish.pipeline.draws import drawn_scale

        assert plan.picked is not None
        scales = (drawn_scale(plan.scenario, plan.picked, "exact"),)
    else:  # two counts: integers, on every sampler grid below 1; a larger scale is post-processing
        scales = plan.scales
        if any(2.0 ** grid_exponent(s) > 1.0 for s in scales):
            raise AssertionError("a count is off the sampler's grid")  # scales beyond 2^40: a bug
    add = add_laplace if plan.noise == "laplace" else add_gaussian
    draws = [add(np.array([v.total]), s, rng=rng) for v, s in zip(table.values, scales, strict=True)]
    sampler = draws[0].describe() if len(draws) == 1 else {"per_statistic": [d.describe() for d in draws]}
    return PropertyRelease(
        model, tuple(float(d.values[0]) for d in draws), tuple(float(d.scale) for d in draws), plan.mechanism,
        eps, plan.delta, plan.noise, checked, sampler, plan.scenario,
    )  # fmt: skip


@dataclass(frozen=True)
class ReleasePlan:
    """How a release of a model's statistics draws its noise (:func:`plan_release`).

    Attributes
    ----------
    mechanism : str
        A registry name.
    scales : tuple of float
        Each statistic's scale (Laplace ``b`` or Gaussian ``sigma``): as calibrated for a
        registry's result; for a theorem's plan, as drawn (the secure sampler's rounding included
        when planned for it).
    noise : {"laplace", "gaussian"}
    delta : float
    checked : str
        What the guarantee rests on.
    scenario : Scenario or None
        One statistic checked exactly: its scenario, which the sampler's draw is checked on again.
    picked : Calibration or None
        The registry's result (one statistic, or two counts together).
    theorem : RowComposition, VectorScale or None
        Statistics certified by a theorem (``row-composition`` or ``wasserstein-coupling``) without
        their exact distribution.
    """

    mechanism: str
    scales: tuple[float, ...]
    noise: str
    delta: float
    checked: str
    scenario: Scenario | None = None
    picked: Calibration | None = None
    theorem: RowComposition | VectorScale | None = None


#: The mechanisms that need no exact distribution of the statistics (a theorem certifies them).
THEOREM_MECHANISMS = ("row-composition", "wasserstein-coupling")


def plan_release(
    model: PropertyModel,
    eps: float,
    mechanism: str | None,
    delta: float,
    noise: str,
    *,
    secure: bool = False,
    weights: str = "rows",
) -> ReleasePlan:
    """The mechanism and scales a release of ``model``'s statistics uses (module docstring): one
    statistic by the registry (default ``optimal``) on its exact priors; two counts of a small
    table by the registry on their joint law; otherwise (or when asked) by a theorem,
    ``row-composition`` by default. Used by :func:`release_property` and by the attack
    (:mod:`pufferfish.dataset.attack`), which simulates the same noise.

    Parameters
    ----------
    model : PropertyModel
    eps : float
        > 0 (checked at the edge).
    mechanism : str or None
        A registry name (checked at the edge), or None for the default.
    delta, noise
        One statistic only; several take Laplace noise and delta = 0 (checked at the edge).
    secure : bool
        The noise is drawn by the secure sampler: a theorem's scales also cover its rounding
        (:func:`sampler_rounding`). Default False (seeded draws, simulations).
    weights : {"rows", "l2"}
        How a theorem's product Laplace shares the noise among statistics
        (:data:`~pufferfish.dataset.model.WEIGHTINGS`; checked at the edge).

    Returns
    -------
    ReleasePlan

    Raises
    ------
    ValueError
        If the mechanism does not apply or fails its check, or needs a joint distribution that is
        not computed.
    StatisticTooLarge
        If one statistic's exact distribution is too large for the mechanism asked for.
    """
    if model.prior_set != "none":
        if mechanism not in (None, "row-composition"):
            raise ValueError(
                f"with prior set {model.prior_set} the statistics are released by row-composition (the "
                f"theorem holds for every pair of conditionals in the sets), got mechanism {mechanism}"
            )
        mechanism = "row-composition"
    if mechanism in THEOREM_MECHANISMS:
        if noise != "laplace" or delta > 0:
            raise ValueError(
                f"mechanism {mechanism} adds Laplace noise with delta = 0, got {noise}, delta {delta:g}"
            )
        return _theorem_plan(model, eps, mechanism, secure, weights)
    if len(model.table.values) > 1:
        together = joint_scenario(model)
        if together is not None:  # two counts: the exact product check on their joint law
            picked = _pick(together, mechanism or "optimal", eps, 0.0, "laplace", "these two counts together")
            checked = (
                f"exact product loss {picked.checked_loss:.6g} (+ bound {picked.check_error_bound:.2g}) of "
                "Laplace noise on both counts, on their exact joint distribution at each share (a "
                f"multinomial of the four row classes), for the point-estimate prior; {picked.decided_by}"
            )
            return ReleasePlan(picked.mechanism, (picked.scale,) * 2, "laplace", 0.0, checked, picked=picked)
        if mechanism is not None:
            raise ValueError(
                f"mechanism {mechanism} needs the statistics' joint distribution, computed for two counts "
                f"of at most {int(MAX_JOINT_POINTS**0.5) - 1} rows; these are released by "
                "row-composition (the default here) or wasserstein-coupling"
            )
        return _theorem_plan(model, eps, "row-composition", secure, weights)
    try:
        scenario = property_scenario(model, 0)
    except StatisticTooLarge as exc:
        if mechanism is not None or noise != "laplace" or delta > 0:
            raise StatisticTooLarge(
                f"{exc}; or release with mechanism row-composition (the default here) or "
                "wasserstein-coupling, which need no exact distribution"
            ) from None
        return _theorem_plan(model, eps, "row-composition", secure, weights)
    picked = _pick(scenario, mechanism or "optimal", eps, delta, noise, "this statistic")
    checked = (
        f"exact {'loss' if picked.checked_delta is None else 'delta'} "
        f"{picked.checked_loss if picked.checked_delta is None else picked.checked_delta:.6g} "
        f"(+ bound {picked.check_error_bound:.2g}) on the statistic's exact distribution at each share, "
        f"for the point-estimate prior; {picked.decided_by}"
    )
    return ReleasePlan(
        picked.mechanism, (picked.scale,), picked.noise, picked.delta, checked, scenario, picked
    )


def _pick(scenario: Scenario, mechanism: str, eps: float, delta: float, noise: str, what: str) -> Calibration:
    """The registry's calibration of ``mechanism`` on ``scenario`` (checked exactly), or ValueError."""
    (picked,) = run_comparison(scenario, [eps], check_mechanisms([mechanism]), delta=delta, noise=noise)
    if not isinstance(picked, Calibration):
        reason = getattr(picked, "reason", "")
        raise ValueError(f"mechanism {mechanism} cannot release {what}: {reason}")
    return picked


def _theorem_plan(
    model: PropertyModel, eps: float, mechanism: str, secure: bool, weights: str
) -> ReleasePlan:
    """Every statistic by ``row-composition`` or ``wasserstein-coupling`` (a theorem, no exact
    distribution of the statistics), the secure sampler's rounding covered when ``secure``."""
    found: RowComposition | VectorScale
    if mechanism == "row-composition":
        rounding = sampler_rounding if secure else None
        found = composition_scales(model, eps, weighting=weights, rounding=rounding)
        scales, checked = found.scales, found.sentence()
        if secure:
            checked += f", of which the secure sampler's rounding {found.rounding:.2g}"
    else:
        found = vector_scale(model, eps, weighting=weights)
        scales, checked = found.scales, found.sentence()
        if secure:
            safe, moved = _safe_scales(found.scales, eps)
            scales = tuple(safe)
            checked += (
                f"; the secure sampler's rounding costs at most {moved:.2g} nats, covered by the scales' "
                f"factor {scales[0] / found.scales[0]!r}"
            )
    checked += f"; the theorem for {model.prior_text()}, not the statistics' exact distribution"
    return ReleasePlan(mechanism, tuple(scales), "laplace", 0.0, checked, theorem=found)


def sampler_rounding(scales: Sequence[float]) -> float:
    """``sum_k max(2^-30, 2^k_k) / s_k``: the most the secure sampler's rounding adds to the loss of
    Laplace scales ``s_k`` (nats).

    The sampler rounds each value to the release grid ``2^-30`` and to its own grid ``2^k_k``
    (:func:`~pufferfish.noise.samplers.grid_exponent`), moving it by at most half the coarser grid,
    and draws exact discrete Laplace on its grid at a scale rounded up. So each output's
    probability is the Laplace density at the drawn scale, up to the factor ``e^{g / (2 s)}`` either
    way per value moved: ratios of two such move by at most ``e^{g / s}``; a larger scale is
    post-processing of Laplace noise. A zero scale adds no noise and is not rounded by the sampler
    (a statistic released as it is: no term).

    Parameters
    ----------
    scales : sequence of float
        The Laplace scales drawn, each >= 0, in the statistics' units.

    Returns
    -------
    float
        The term (nats, >= 0) a theorem's loss bound adds for the secure sampler.
    """
    return math.fsum(max(2.0**-30, 2.0 ** grid_exponent(s)) / s for s in scales if s > 0)


def _safe_scales(scales: Sequence[float], eps: float) -> tuple[list[float], float]:
    """The scales times the smallest factor ``f`` of ``1 + 2^-20 2^j`` whose rounding term fits.

    Two coupled values move apart by at most the grid step of :func:`sampler_rounding` more, so
    the coupling's loss is at most ``(W / b + sum_k g_k / s_k) / f`` with ``s_k`` the scales
    before the factor, which is <= eps when the term (``moved``) is at most ``eps (1 - 1 / f)``.
    Returns the scales and ``moved``.

    Raises
    ------
    ValueError
        If no factor up to 2 covers the term (scales too small for the sampler's grid).
    """
    factor = VECTOR_SAFETY
    while factor <= 2.0:
        drawn = [s * factor for s in scales]
        steps = [max(2.0**-30, 2.0 ** grid_exponent(d)) for d in drawn]
        moved = math.fsum(g / s for g, s in zip(steps, scales, strict=True))
        if moved <= eps * (1.0 - 1.0 / factor):
            return drawn, moved
        factor = 1.0 + 2.0 * (factor - 1.0)
    raise ValueError(f"scales {list(scales)} are too small for the secure sampler's grid at eps {eps:g}")
