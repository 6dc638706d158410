"""Release a table's statistics with noise that keeps the share of rows with a property secret.

The model's ``n`` is the table's rows kept (:class:`~pufferfish.dataset.table.PropertyTable`).
One statistic: the registry's mechanism (default ``optimal``) calibrated on its exact priors and
checked exactly, then checked again as the secure sampler draws it
(:func:`~pufferfish.pipeline.draws.drawn_scale`). Two counts of a small table: the registry's
mechanism on their exact joint distribution, checked by the product check
(:func:`~pufferfish.dataset.model.joint_scenario`). Other statistics together: the Wasserstein
mechanism on the coupling of the shares (:mod:`pufferfish.dataset.coupling`, seed 002 Thm 1),
product Laplace noise.

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
from pufferfish.dataset.coupling import VectorScale, vector_scale
from pufferfish.dataset.model import (
    MAX_JOINT_POINTS,
    PRIOR_NAME,
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
        A registry name (one statistic) or ``"wasserstein-coupling"`` (several).
    epsilon, delta : float
    noise : {"laplace", "gaussian"}
    checked : str
        What the guarantee rests on: the exact check's loss, or the theorem and coupling.
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
                f"table's rows with and without the property ({PRIOR_NAME}, the point estimate)"
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
    rng: np.random.Generator | int | None = None,
) -> PropertyRelease:
    """Release ``data``'s statistics under the dataset-level guarantee (module docstring).

    Parameters
    ----------
    data : str, pathlib.Path or pandas.DataFrame
        The table released (shipped ``adult``, CSV, Parquet).
    property, queries, shares, delta, noise
        As :func:`~pufferfish.dataset.calibrate.calibrate_property`; ``n`` is the table's rows kept.
    epsilon : float
        Finite and > 0 (nats).
    mechanism : str, optional
        One statistic: a registry name (default ``optimal``, the smallest scale passing the exact
        check on the statistic's exact distribution). ``wasserstein-coupling`` needs no exact
        distribution: when the sum's lattice is too large
        (:class:`~pufferfish.dataset.statistic.StatisticTooLarge`), its scale rests on the theorem
        alone. Several statistics (Laplace noise, pure eps): two counts of a small table
        (:func:`~pufferfish.dataset.model.joint_scenario`) by a registry name (default ``optimal``)
        checked exactly on their joint distribution; otherwise ``wasserstein-coupling``.
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
    request = property_request(data, property, eps, queries, shares, None, delta, noise, named)
    if len(request.statistics) > 1 and (request.noise != "laplace" or request.delta > 0):
        raise ValueError(
            "several statistics are released together with Laplace noise and delta = 0 (two counts: "
            "checked exactly on their joint law; otherwise the Wasserstein mechanism on the coupling), "
            f"got noise {request.noise}, delta {request.delta:g}"
        )
    table = read_property_table(request.data, request.prop, request.statistics)
    model = PropertyModel(table, request.shares, table.rows)
    plan = plan_release(model, eps, mechanism, request.delta, request.noise)
    checked = plan.checked
    if rng is not None:  # the seeded sampler draws the scales as calibrated
        scales = plan.scales
    elif plan.coupling is not None:
        safe, moved = _safe_scales(plan.scales, eps)
        scales = tuple(safe)
        checked += (
            f"; the secure sampler's rounding costs at most {moved:.2g} nats, covered by the scales' "
            f"factor {scales[0] / plan.scales[0]!r}"
        )
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
        A registry name, or ``wasserstein-coupling`` for several statistics on the theorem.
    scales : tuple of float
        Each statistic's scale as calibrated (Laplace ``b`` or Gaussian ``sigma``), before the
        secure sampler rounds it.
    noise : {"laplace", "gaussian"}
    delta : float
    checked : str
        What the guarantee rests on.
    scenario : Scenario or None
        One statistic checked exactly: its scenario, which the sampler's draw is checked on again.
    picked : Calibration or None
        The registry's result (one statistic, or two counts together).
    coupling : VectorScale or None
        Several statistics (or one too large to compute) on the theorem of the coupling.
    """

    mechanism: str
    scales: tuple[float, ...]
    noise: str
    delta: float
    checked: str
    scenario: Scenario | None = None
    picked: Calibration | None = None
    coupling: VectorScale | None = None


def plan_release(
    model: PropertyModel, eps: float, mechanism: str | None, delta: float, noise: str
) -> ReleasePlan:
    """The mechanism and scales a release of ``model``'s statistics uses (module docstring): one
    statistic by the registry (default ``optimal``) on its exact priors, or ``wasserstein-coupling``
    when they are too large; two counts of a small table by the registry on their joint law;
    others by ``wasserstein-coupling``. Used by :func:`release_property` and by the attack
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
    coupling = "wasserstein-coupling"
    if len(model.table.values) > 1:
        together = joint_scenario(model) if mechanism != coupling else None
        if together is not None:  # two counts: the exact product check on their joint law
            picked = _pick(together, mechanism or "optimal", eps, 0.0, "laplace", "these two counts together")
            checked = (
                f"exact product loss {picked.checked_loss:.6g} (+ bound {picked.check_error_bound:.2g}) of "
                "Laplace noise on both counts, on their exact joint distribution at each share (a "
                f"multinomial of the four row classes), for the point-estimate prior; {picked.decided_by}"
            )
            return ReleasePlan(picked.mechanism, (picked.scale,) * 2, "laplace", 0.0, checked, picked=picked)
        if mechanism not in (None, coupling):
            raise ValueError(
                f"mechanism {mechanism} needs the statistics' joint distribution, computed for two counts "
                f"of at most {int(MAX_JOINT_POINTS**0.5) - 1} rows; these are released by "
                "wasserstein-coupling (the default here)"
            )
        return _coupling_plan(model, eps)
    chosen = mechanism or "optimal"
    try:
        scenario = property_scenario(model, 0)
    except StatisticTooLarge as exc:
        if chosen != coupling:
            raise StatisticTooLarge(
                f"{exc}; or release with mechanism wasserstein-coupling, which needs no exact distribution"
            ) from None
        return _coupling_plan(model, eps)
    picked = _pick(scenario, chosen, eps, delta, noise, "this statistic")
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


def _coupling_plan(model: PropertyModel, eps: float) -> ReleasePlan:
    """Every statistic by the Wasserstein mechanism on the coupling (the theorem alone)."""
    found = vector_scale(model, eps)
    checked = (
        f"{found.sentence()}; the theorem, not a numerical check (the statistics' joint distribution "
        "is too large to enumerate)"
    )
    return ReleasePlan("wasserstein-coupling", found.scales, "laplace", 0.0, checked, coupling=found)


def _safe_scales(scales: Sequence[float], eps: float) -> tuple[list[float], float]:
    """The scales times the smallest factor ``f`` of ``1 + 2^-20 2^j`` whose rounding term fits.

    The secure sampler rounds each value to the release grid ``2^-30`` and to its own grid ``2^k``
    (:func:`~pufferfish.noise.samplers.grid_exponent`), so two coupled values move apart by at most
    ``max(2^-30, 2^k)`` more: the loss is at most ``(W / b + sum_k max(2^-30, 2^k_k) / s_k) / f``
    with ``s_k`` the scales before the factor, which is <= eps when the term (``moved``) is at
    most ``eps (1 - 1 / f)``. Returns the scales and ``moved``.

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
