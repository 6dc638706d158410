"""How each released column is drawn at the chosen calibration, and that draw checked again as
the sampler makes it: one column's scale rounded up to the secure sampler's grid
(:func:`sampler_scale`), several columns' product channel (:func:`column_draws`,
:func:`drawn_scales_check`); :func:`released_columns` gives the engines'
:class:`~pufferfish.tables.perturb.ReleasedColumn` for either case.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from pufferfish.calibration import Calibration, MappingCalibration, PrivacyCheckError
from pufferfish.calibration import check_pairs as check_scenario
from pufferfish.calibration.check import measure, passes
from pufferfish.calibration.search import GRID_SAFETY_STEPS, first_passing
from pufferfish.noise.channels import ONE, RandomizedResponseChannel
from pufferfish.noise.samplers import discretisation_delta, moved_centres_term, sampler_grid
from pufferfish.pipeline.results import TableCalibration
from pufferfish.priors.distributions import RELEASE_EXPONENT
from pufferfish.priors.scenario import Scenario
from pufferfish.tables.model import EstimatedPriors, label_codes
from pufferfish.tables.perturb import ReleasedColumn

__all__ = ["column_draws", "drawn_scale", "drawn_scales_check", "released_columns", "sampler_scale"]


def column_draws(table: TableCalibration, scale: float, sampler: str | None) -> list[ReleasedColumn]:
    """How each column is drawn at the scale ``b``: numeric column ``k`` gets ``Laplace(b w_k)``
    (rounded up to the secure sampler's grid, :func:`pufferfish.noise.samplers.sampler_grid`, unless
    ``sampler`` is None: a seeded NumPy draw); a categorical column of ``m >= 2`` labels gets the
    randomized response of log ratio at most ``1 / (b w_k)`` on the dyadic grid
    (:meth:`~pufferfish.noise.channels.RandomizedResponseChannel.from_log_ratio`), its labels kept; one
    label is released as it is. :attr:`ReleasedColumn.scale` is the drawn Laplace scale, or
    ``1 / log ratio`` of the drawn response (the scale of the metric's channel it is)."""
    return _draws(table, scale, sampler)[0]


def _draws(
    table: TableCalibration, scale: float, sampler: str | None
) -> tuple[list[ReleasedColumn], list[int]]:
    """:func:`column_draws` and the grid exponent each column's values are rounded to as released
    (a numeric column's sampler grid, :data:`RELEASE_EXPONENT` for label codes and for a seeded
    draw), from one :func:`~pufferfish.noise.samplers.sampler_grid` per numeric column."""
    out, exponents = [], []
    metric = table.scenario.metric
    kept = metric.identity if metric is not None else (False,) * len(table.columns)
    bounds = table.estimated.bounds  # the one numeric column's declared domain (None for one column here)
    atoms = metric.missing if metric is not None else (False,) * len(table.columns)
    for c, cat, labels, w, same, atom in zip(
        table.columns, table.categorical, table.labels, table.units, kept, atoms, strict=True
    ):
        if same:  # kept in clear inside the check: the identity channel, every label as it is
            codes_for = partial(label_codes, known=labels, codes=range(len(labels)), column=c)
            identity = RandomizedResponseChannel(len(labels), ONE, 0) if len(labels) >= 2 else None
            out.append(ReleasedColumn(c, True, codes_for, 0.0, identity, tuple(labels), kept=True))
            exponents.append(RELEASE_EXPONENT)
        elif cat:
            codes_for = partial(label_codes, known=labels, codes=range(len(labels)), column=c)
            channel = None
            drawn = math.inf
            if len(labels) >= 2 and scale > 0:
                channel = RandomizedResponseChannel.from_log_ratio(len(labels), 1.0 / (scale * w))
                drawn = 1.0 / channel.log_ratio
            elif len(labels) >= 2:
                channel = RandomizedResponseChannel(len(labels), ONE, 0)
                drawn = 0.0
            out.append(ReleasedColumn(c, True, codes_for, drawn, channel, tuple(labels)))
            exponents.append(RELEASE_EXPONENT)
        else:
            b = scale * w
            k, drawn = RELEASE_EXPONENT, b
            if sampler is not None and b != 0.0:
                k, _, drawn = sampler_grid(b, "laplace", sampler)
            out.append(ReleasedColumn(c, False, None, drawn, bounds=bounds, missing_checked=atom,
                                      impute=table.estimated.impute))  # fmt: skip
            exponents.append(k)
    return out, exponents


def drawn_scales_check(
    table: TableCalibration, chosen: Calibration, rng: Any, sampler: str
) -> list[ReleasedColumn]:
    """Each column's draw (:func:`column_draws`), checked jointly.

    The secure sampler draws numeric column ``k`` at ``b w_k`` rounded up to its grid and a
    categorical one by a randomized response on the dyadic grid; a seeded ``rng`` draws ``b w_k``
    exactly (and is not checked again: experiments only). The exact loss of the product channel
    at the drawn parameters (the metric with units = the drawn scales, scale 1), on the priors
    with each numeric column rounded to its sampler's grid as the release rounds it
    (:meth:`pufferfish.priors.scenario.Scenario.on_grid`; values move only for scales from ``2^11`` on, by
    at most ``2^-41`` of the scale; label codes never move), must pass eps, over the prior sets
    when there are some. Raising one column's scale is post-processing on that column
    (``Laplace(b') = Laplace(b) * (mixture)``, SPEC sec 2.1; a weaker randomized response is the
    stronger one followed by another), but moving the values is not, so a tight scale may fail
    at its grid: ``b`` is then raised by the release's ladder
    (:data:`pufferfish.calibration.search.GRID_SAFETY_STEPS`, a relative 2^-30 first) until the check
    passes. Pure eps needs no grid term: at grid points the pmf ratio is the density ratio.

    Raises
    ------
    PrivacyCheckError
        If no step of the ladder passes the check (a bug).
    """
    if rng is not None or chosen.scale == 0.0:
        return column_draws(table, chosen.scale, None)
    tried: list[str] = []
    found: list[ReleasedColumn] = []
    metric = table.scenario.metric
    assert metric is not None

    def passes_at(b: float) -> bool:
        draws, exponents = _draws(table, b, sampler)
        units = tuple(d.scale if math.isfinite(d.scale) and d.scale > 0 else 1.0 for d in draws)
        # what is released: each numeric column rounded to its sampler's grid (priors.to_grid)
        at = Scenario(table.scenario.pairs, table.scenario.priors, metric.with_units(units))
        chk = check_scenario(at.on_grid(exponents), "laplace", 1.0, chosen.epsilon, 0.0)
        tried.append(
            f"{dict(zip(table.columns, units, strict=True))}: loss {chk.value!r} (+ {chk.error:.3g})"
        )
        if chk.passes(chosen.epsilon):
            found[:] = draws
            return True
        return False

    if first_passing(chosen.scale, passes_at, steps=GRID_SAFETY_STEPS) is None:
        raise PrivacyCheckError(
            f"{chosen.mechanism} at the drawn scales fails the exact check against {chosen.epsilon!r}: "
            + "; ".join(tried)
        )
    return found


def sampler_scale(
    table: TableCalibration, picked: Calibration | MappingCalibration, rng: Any, sampler: str
) -> float:
    """The scale handed to the sampler: the chosen one, checked again as the sampler draws it.

    Parameters
    ----------
    table : TableCalibration
        The calibration of one released column (its scenario and secret weights).
    picked : Calibration or MappingCalibration
        The chosen result; a mapping (or a scale of 0) is released as it is: returns 0.
    rng : numpy.random.Generator, int or None
        Anything but None is the insecure continuous sampler: the chosen scale is returned.
    sampler : {"exact", "opendp"}
        ``"exact"`` rounds the scale up to its grid, OpenDP's sampler draws the scale as it is
        (:func:`pufferfish.noise.samplers.sampler_grid`). Either is checked here.

    Returns
    -------
    float
        The smallest of ``scale (1 + r)``, ``r`` in :data:`GRID_SAFETY_STEPS`, whose rounded scale
        passes the check of what is released: the priors' values rounded to the sampler's grid
        ``2^k`` (:meth:`pufferfish.priors.scenario.Scenario.on_grid`; a Gaussian-mixture prior adds the
        bound :func:`pufferfish.noise.samplers.moved_centres_term` instead), with, for an (eps, delta)
        criterion, the grid's extra delta (:func:`pufferfish.noise.samplers.discretisation_delta`) added
        to the check's error bound.

    Raises
    ------
    pufferfish.calibration.PrivacyCheckError
        If none passes (the steps are far larger than that term: a bug).

    Notes
    -----
    The loss is non-increasing in the scale (SPEC sec 2.1), so rounding the scale up cannot fail a
    pure-eps check, but from a scale of ``2^11`` on the sampler's grid is coarser than the release
    grid and the values move (by at most ``2^-41`` of the scale), which the check here sees; with
    delta > 0 the discrete noise's delta may exceed the continuous noise's by the
    grid term (about 1e-12 (1 + e^eps)), so a scale calibrated to meet delta to the last digit is
    raised by a relative 2^-30 (or more) until the sum passes.
    """
    if not isinstance(picked, Calibration) or picked.scale == 0.0:
        return 0.0
    if rng is not None:
        return picked.scale
    assert isinstance(table.estimated, EstimatedPriors), "one column: several are drawn_scales_check's"
    return drawn_scale(table.scenario, picked, sampler, table.estimated.secret_weights)


def drawn_scale(scenario: Scenario, picked: Calibration, sampler: str, weights: Any = None) -> float:
    """:func:`sampler_scale` of a scenario: the smallest scale of the safety ladder above
    ``picked.scale`` whose draw by the secure ``sampler`` passes the check of what is released
    (the priors' values rounded to the sampler's grid). Used by :func:`sampler_scale` and by the
    releases of one value (:mod:`pufferfish.dataset.release`).

    Parameters
    ----------
    scenario : Scenario
        The scenario ``picked`` was calibrated on.
    picked : Calibration
        A scale > 0.
    sampler : {"exact", "opendp"}
    weights : optional
        The secret's marginal, for an eps-MI criterion.

    Returns
    -------
    float

    Raises
    ------
    pufferfish.calibration.PrivacyCheckError
        If none passes (a bug).
    """
    with_delta = picked.criterion == "(eps, delta)-PP" and picked.delta > 0.0
    tried: list[str] = []
    target = picked.delta if with_delta else picked.epsilon
    continuous = scenario.kind == "gaussian-mixture"

    def passes_at(scale: float) -> bool:
        k, units, drawn = sampler_grid(scale, picked.noise, sampler)
        if continuous and picked.criterion == "eps-MI PP" and k > RELEASE_EXPONENT:
            raise PrivacyCheckError(
                f"{picked.mechanism}: an eps-MI check of Gaussian-mixture priors cannot account for "
                f"the sampler's grid 2^{k} at scale {drawn!r}; use discrete priors (--prior empirical)"
            )
        # what is released: the values rounded to the sampler's grid (priors.to_grid), then noise
        at = scenario if continuous else scenario.on_grid(k)
        chk, goal = measure(at, picked.criterion, picked.noise, drawn, picked.epsilon,
                            picked.delta, weights)  # fmt: skip
        extra = discretisation_delta(picked.noise, picked.epsilon, units) if with_delta else 0.0
        if continuous:
            extra += moved_centres_term(picked.noise, picked.epsilon, with_delta, k, drawn)
        tried.append(f"{drawn!r}: {chk.value!r} + {chk.error + extra!r}")
        return passes(chk.value, chk.error + extra, goal)

    found = first_passing(picked.scale, passes_at, steps=GRID_SAFETY_STEPS)
    if found is None:
        raise PrivacyCheckError(
            f"{picked.mechanism} at the sampler's rounded scales fails its check against {target!r} ("
            + "; ".join(tried)
            + ")"
        )
    return found[0]


def released_columns(
    table: TableCalibration, chosen: Calibration | MappingCalibration, rng: Any, sampler: str
) -> list[ReleasedColumn]:
    """The columns a release replaces, drawn as checked, for one column or several.

    Parameters
    ----------
    table : TableCalibration
        The calibration (:attr:`TableCalibration.columns`, ``d >= 1``).
    chosen : Calibration or MappingCalibration
        The result released (several columns: a Laplace :class:`Calibration`).
    rng : numpy.random.Generator, int or None
        None: the secure samplers (their draws checked again); else NumPy's, insecure, at the
        chosen scale.
    sampler : {"exact", "opendp"}

    Returns
    -------
    list of ReleasedColumn
        One column: its value plus noise at :func:`sampler_scale`, or its value drawn from the
        chosen mapping's matrix (labels stay labels). Several: the product channel
        (:func:`drawn_scales_check`).

    Raises
    ------
    PrivacyCheckError
        If no scale of the safety ladder passes the check of what is drawn (a bug).
    """
    if len(table.columns) > 1:
        assert isinstance(chosen, Calibration), "several columns release the product channel"
        return drawn_scales_check(table, chosen, rng, sampler)
    est = table.released_table
    assert isinstance(est, EstimatedPriors)
    mapping = chosen if isinstance(chosen, MappingCalibration) else None
    scale = sampler_scale(table, chosen, rng, sampler)
    codes_for = est.codes_for if est.categorical else None
    return [
        ReleasedColumn(
            est.public_column,
            est.categorical,
            codes_for,
            scale,
            mapping=mapping,
            estimated=est,
            bounds=est.bounds,
            impute=est.impute,
        )
    ]
