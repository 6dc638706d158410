"""The mechanism registry and the front doors :func:`calibrate` and :func:`compare`.

A mechanism is one :class:`Mechanism` entry: its name, the noise it adds, the criterion it
targets, its source, when it applies, and the function giving its scale (``None``: the smallest
scale passing the exact check, :func:`.search.calibrate_optimal`). Every scale goes through one
path: validate at the edge, ask the entry whether it applies, propose the scale, check it exactly
and move it to the safe side (:func:`.search.verified`). Adding a mechanism is adding an entry to
:data:`REGISTRY` (the documentation's table, :func:`mechanism_table`, is generated from it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np

from pufferfish._checks import check_delta, check_epsilon, check_epsilons
from pufferfish.calibration import discrete, gaussian, information, joint
from pufferfish.calibration.check import uncheckable
from pufferfish.calibration.mapping import (
    Utility,
    check_alphabet,
    default_utility,
    mapping_calibration,
    scenario_support,
)
from pufferfish.calibration.result import (
    Calibration,
    MappingCalibration,
    PrivacyCheckError,
    Skipped,
    TimeLimitError,
)
from pufferfish.calibration.search import (
    OPTIMAL_SOURCE,
    Proposal,
    Target,
    smallest_passing,
    unverified,
    verified,
)
from pufferfish.defaults import TIME_LIMIT as _TIME_LIMIT
from pufferfish.loss.density import check_noise
from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.priors.scenario import Scenario

ScaleFunction = Callable[[Scenario, float, float, Any], Proposal]
"""``scale(scenario, epsilon, delta, secret_weights) -> Proposal`` (no check)."""

AppliesFunction = Callable[[Scenario, str, float, float], "str | None"]
"""``applies(scenario, noise, delta, epsilon) -> reason or None``."""


def _always(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
    return None


def _discrete_only(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
    return None if scenario.kind in ("discrete", "joint") else "needs discrete priors"


def _by_kind(one: ScaleFunction, several: ScaleFunction) -> ScaleFunction:
    """A scale function that runs ``several`` (:mod:`.joint`) on joint priors, else ``one``."""

    def out(scenario: Scenario, epsilon: float, delta: float, secret_weights: Any) -> Proposal:
        return (several if scenario.kind == "joint" else one)(scenario, epsilon, delta, secret_weights)

    return out


def _mapping_applies(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
    if scenario.kind == "joint":
        return "maps one column's alphabet (not for several columns)"
    try:
        scenario_support(scenario)
    except ValueError as exc:
        return str(exc)
    return None


def _dense_mapping_applies(name: str) -> AppliesFunction:
    """:func:`_mapping_applies`, and the alphabet limit of a dense mapping (``k^2`` entries),
    answered before anything is allocated (issue 34)."""

    def applies(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
        reason = _mapping_applies(scenario, noise, delta, epsilon)
        if reason is None:
            try:
                check_alphabet(scenario_support(scenario).size, name)
            except ValueError as exc:
                return str(exc)
        return reason

    return applies


class ModelMechanisms(Protocol):
    """The implementations of the registry's model-specific mechanisms for one kind of prior model
    (:data:`MODEL_MECHANISMS`): the registry keeps their names, sources and order; the package that
    defines the model provides what they compute."""

    def scale(self, which: str, scenario: Scenario, epsilon: float) -> Proposal:
        """The mechanism ``which``'s proposed scale (checked by the registry's path)."""
        ...

    def applies(self, which: str, scenario: Scenario, noise: str) -> str | None:
        """Why ``which`` does not apply to the scenario's model, or None."""
        ...


#: Model-specific mechanisms by model kind (the scenario model's ``kind``): registered explicitly by
#: the package that defines the model (:func:`register_model_mechanisms`; ``pufferfish.markov``
#: registers ``"markov count"`` when imported, which every count scenario's model implies;
#: ``pufferfish.dataset`` registers ``"dataset property"``), so that this module imports none of them.
MODEL_MECHANISMS: dict[str, ModelMechanisms] = {}


def register_model_mechanisms(kind: str, implementation: ModelMechanisms) -> None:
    """Register the implementations of the model-specific mechanisms for models of ``kind``."""
    MODEL_MECHANISMS[kind] = implementation


def _model_kind(which: str) -> tuple[ScaleFunction, AppliesFunction]:
    """The scale and applies functions of the model-specific mechanism ``which`` (Markov counts:
    ``group-dp``, ``gk16``, ``mqm-approx``, ``mqm-exact``, ``optimal-set``; dataset properties:
    ``group-dp``, ``wasserstein-coupling``, ``row-composition``), dispatched by the scenario
    model's ``kind`` to :data:`MODEL_MECHANISMS`."""

    def scale(scenario: Scenario, epsilon: float, delta: float, secret_weights: Any) -> Proposal:
        return MODEL_MECHANISMS[getattr(scenario.model, "kind", "")].scale(which, scenario, epsilon)

    def applies(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
        found = MODEL_MECHANISMS.get(getattr(scenario.model, "kind", ""))
        if found is None:
            return (
                "needs a count on a Markov chain (pufferfish markov) or a dataset property "
                "(pufferfish property)"
            )
        return found.applies(which, scenario, noise)

    return scale, applies


def _optimal_applies(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
    if noise == "gaussian" and delta == 0.0:
        return "Gaussian noise gives pure eps only for special priors; give delta > 0"
    return uncheckable(scenario, "(eps, delta)-PP", noise, delta)  # the searched scale needs a check


@dataclass(frozen=True)
class Mechanism:
    """One calibrator.

    Attributes
    ----------
    name : str
        Its name in the API, CLI and reports.
    noise : {"laplace", "gaussian"} or None
        The noise it adds (``None``: the noise asked for).
    criterion : {"(eps, delta)-PP", "eps-MI PP"}
        What its scale guarantees.
    source : str
        Paper, theorem and equation.
    priors : str
        The priors it takes, for the documentation table.
    scale : callable or None
        ``scale(scenario, epsilon, delta, secret_weights) -> Proposal``; ``None`` for the
        smallest passing scale (searched).
    applies : callable
        ``applies(scenario, noise, delta, epsilon) -> str | None``: why it does not apply.
    pure : bool
        Its theorem gives pure eps with Laplace noise: with ``delta > 0`` it is checked as pure eps
        (pure eps implies every (eps, delta)), reported with ``checked_delta = 0``.
    robust : bool
        Valid for every prior in a prior set (:attr:`pufferfish.priors.scenario.Scenario.robust`): its
        scale holds for any prior on the declared supports, or it is the searched smallest
        passing scale of the worst-case check. Others are listed "not valid for a prior set".
    mapping : bool
        A randomized mapping of the finite alphabet (:mod:`.mapping`): it releases values of the
        alphabet (labels), not ``x + noise``, and returns a
        :class:`~pufferfish.calibration.result.MappingCalibration`. Not in the default set of
        :func:`compare` (the table pipeline adds them for categorical columns).
    """

    name: str
    noise: str | None
    criterion: str
    source: str
    priors: str
    scale: ScaleFunction | None
    applies: AppliesFunction = _always
    pure: bool = False
    robust: bool = False
    mapping: bool = False


_G = gaussian
_I = information
_ENTRIES = (
    Mechanism("l1", "laplace", "(eps, delta)-PP", "seed 001 eq (26)", "discrete, joint",
              _by_kind(lambda sc, e, d, w: discrete.l1_scale(sc, e), joint.l1_scale), _discrete_only,
              pure=True, robust=True),
    Mechanism("kantorovich", "laplace", "(eps, delta)-PP",
              "seed 002 Lemma 1, Thm 1; seed 000 Prop 1-2; seed 001 eq (4)", "discrete, joint",
              _by_kind(lambda sc, e, d, w: discrete.kantorovich_scale(sc, e), joint.kantorovich_scale),
              _discrete_only, pure=True),
    Mechanism("wasserstein-inf", "laplace", "(eps, delta)-PP",
              "Song, Wang and Chaudhuri (2017) W-infinity mechanism; seed 002 Thm 1 on the bottleneck plan",
              "discrete, joint",
              _by_kind(lambda sc, e, d, w: discrete.kantorovich_scale(sc, e), joint.wasserstein_inf_scale),
              _discrete_only, pure=True),
    Mechanism("relaxed", "laplace", "(eps, delta)-PP",
              "seed 002 Thm 2 (14a, 14b); seed 001 Prop 3.2-3.3", "discrete, joint",
              _by_kind(lambda sc, e, d, w: discrete.relaxed_scale(sc, e), joint.relaxed_scale),
              _discrete_only, pure=True),
    Mechanism("monge", "laplace", "(eps, delta)-PP",
              "seed 003 Thm 1 eq (5), tau* = Q^-1(delta/2) eq (20); Remark 1 eq (6) for delta = 0",
              "Gaussian", _G.monge_scale, _G.monge_applies),
    Mechanism("monge-lambertw", "laplace", "(eps, delta)-PP",
              "seed 003 Thm 1 eq (5), tau* = sqrt(W0(2/(pi delta^2))) eq (23)", "Gaussian",
              _G.monge_lambertw_scale, _G.monge_lambertw_applies),
    Mechanism("gmm", "laplace", "(eps, delta)-PP", "seed 003 Thm 2 eq (13), w* by POT ot.emd",
              "Gaussian mixture", _G.gmm_scale, _G.gmm_applies),
    Mechanism("gmm-translation", "laplace", "(eps, delta)-PP", "seed 003 Cor 2 eq (15)",
              "Gaussian mixture", _G.gmm_translation_scale, _G.gmm_translation_applies),
    Mechanism("kantorovich-gaussian", "gaussian", "(eps, delta)-PP",
              "seed 002 Thm 3(a): sigma = c Delta / eps, c^2 > 2 ln(1.25/delta) (L2 Delta for joint)",
              "discrete, joint, Gaussian translates",
              _by_kind(_G.kantorovich_gaussian_scale, joint.kantorovich_gaussian_scale),
              _G.kantorovich_gaussian_applies),
    Mechanism("analytic-gaussian", "gaussian", "(eps, delta)-PP",
              "Balle and Wang (2018) Thm 8 at the Kantorovich sensitivity (SPEC sec 5; L2 for joint)",
              "discrete, joint, Gaussian translates",
              _by_kind(_G.analytic_gaussian_scale, joint.analytic_gaussian_scale),
              _G.analytic_gaussian_applies),
    Mechanism("mi-gaussian", "gaussian", "eps-MI PP", "seed 004 Thm 3 (no public function)",
              "any", _I.mi_gaussian_scale),
    Mechanism("mi-gaussian-entropy", "gaussian", "eps-MI PP",
              "seed 004 Thm 4 with B = exp(2h - 1)/(2 pi) (SPEC sec 6)", "Gaussian mixture",
              _I.mi_gaussian_entropy_scale, _I.mi_gaussian_entropy_applies),
    Mechanism("mi-laplace", "laplace", "eps-MI PP", "seed 004 Remark 6 (no public function)",
              "any", _I.mi_laplace_scale),
    Mechanism("group-dp", "laplace", "(eps, delta)-PP",
              "group differential privacy over all records (a chain's T steps, a data set's n rows)",
              "Markov count, dataset property", *_model_kind("group-dp"), pure=True, robust=True),
    Mechanism("gk16", "laplace", "(eps, delta)-PP",
              "Ghosh and Kleinberg 2016, inferential privacy of a binary chain (Gamma matrix)",
              "Markov count", *_model_kind("gk16"), pure=True),
    Mechanism("mqm-approx", "laplace", "(eps, delta)-PP",
              "Song, Wang and Chaudhuri 2017 Alg 2, MQMApprox (eigengap and pi_min bound)",
              "Markov count", *_model_kind("mqm-approx"), pure=True),
    Mechanism("mqm-exact", "laplace", "(eps, delta)-PP",
              "Song, Wang and Chaudhuri 2017 Alg 2, MQMExact (exact max-influence)",
              "Markov count", *_model_kind("mqm-exact"), pure=True),
    Mechanism("wasserstein-coupling", "laplace", "(eps, delta)-PP",
              "seed 002 Thm 1 on the quantile coupling of the counts of rows with the property (W_inf of two "
              "binomials) times a row's largest change: one statistic, W_inf of a row's value across the "
              "groups (pufferfish.dataset.coupling)",
              "dataset property", *_model_kind("wasserstein-coupling"), pure=True, robust=True),
    Mechanism("row-composition", "laplace", "(eps, delta)-PP",
              "exact loss of one row (the product check, seed 002 Thm 1's channel) composed through the "
              "binomial count of rows with the property, its moment generating function "
              "(pufferfish.dataset.composition)",
              "dataset property", *_model_kind("row-composition"), pure=True),
    Mechanism("optimal", None, "(eps, delta)-PP", OPTIMAL_SOURCE, "any", None, _optimal_applies,
              robust=True),
    Mechanism("optimal-set", "laplace", "(eps, delta)-PP",
              "smallest scale certified over every binary chain of the confidence set (branch and bound on "
              "a convex bound of the exact loss; pufferfish.markov.setopt)",
              "Markov count", *_model_kind("optimal-set"), pure=True),
    Mechanism("randomized-response-dp", None, "(eps, delta)-PP",
              "k-ary randomized response p = e^eps / (e^eps + k - 1) (Warner 1965; Kairouz et al. 2014)",
              "discrete", None, _mapping_applies, pure=True, robust=True, mapping=True),
    Mechanism("randomized-response", None, "(eps, delta)-PP",
              "k-ary randomized response, largest p passing the exact check", "discrete", None,
              _mapping_applies, pure=True, robust=True, mapping=True),
    Mechanism("geometric", None, "(eps, delta)-PP",
              "two-sided geometric on the codes, clamped (Ghosh et al. 2012); smallest passing",
              "discrete", None, _dense_mapping_applies("geometric"), pure=True, robust=True, mapping=True),
    Mechanism("optimal-mapping", None, "(eps, delta)-PP",
              "linear program over randomized mappings (HiGHS); prior sets written in by LP duality",
              "discrete", None, _dense_mapping_applies("optimal-mapping"), pure=True, robust=True,
              mapping=True),
)  # fmt: skip

#: Every mechanism by name, in the order of comparisons (most to least noise for discrete priors,
#: ``optimal`` last).
REGISTRY: Mapping[str, Mechanism] = MappingProxyType({m.name: m for m in _ENTRIES})

#: Every calibrator name, in the order of comparisons.
MECHANISMS: tuple[str, ...] = tuple(REGISTRY)

#: The randomized mappings (categorical releases), in the order of comparisons.
MAPPING_MECHANISMS: tuple[str, ...] = tuple(m.name for m in _ENTRIES if m.mapping)

#: A calibration result: additive noise or a randomized mapping.
Result = Calibration | MappingCalibration


def lookup(name: Any) -> Mechanism:
    """The registered :class:`Mechanism` called ``name``.

    Raises
    ------
    ValueError
        If no mechanism has that name (the message lists them).
    """
    if not isinstance(name, str) or name not in REGISTRY:
        raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}, got {name!r}")
    return REGISTRY[name]


def not_applicable(
    scenario: Scenario, mechanism: str | Mechanism, noise: str, delta: float, epsilon: float = 0.5
) -> str | None:
    """Why a mechanism does not apply to these priors, noise, delta and epsilon, or ``None``.

    Parameters
    ----------
    scenario : Scenario
    mechanism : str or Mechanism
        A name of :data:`MECHANISMS`, or its registry entry.
    noise : {"laplace", "gaussian"}
    delta : float
        In [0, 1).
    epsilon : float
        > 0 (some theorems need a small eps).

    Returns
    -------
    str or None
    """
    m = mechanism if isinstance(mechanism, Mechanism) else lookup(mechanism)
    if m.noise is not None and m.noise != noise:
        return f"adds {m.noise} noise, not {noise}"
    if scenario.kind == "joint":
        reason = _joint_rule(scenario, m, noise)
        if reason is not None:
            return reason
    if scenario.robust:
        if not m.robust:
            return "not valid for a prior set (its theorem holds for the point estimate only)"
        if noise != "laplace" or delta != 0.0:
            return "under a prior set only pure eps with Laplace noise is checked exactly"
    return m.applies(scenario, noise, delta, epsilon)


#: Why Gaussian noise is refused on several columns (issue 31).
JOINT_GAUSSIAN = (
    "Gaussian noise on several columns has no exact (eps, delta) check on the joint alphabet: "
    "use Laplace noise (the product channel, checked exactly)"
)


def _joint_rule(scenario: Scenario, m: Mechanism, noise: str) -> str | None:
    """Why a mechanism does not apply to joint priors, or ``None``: Gaussian noise on ``d >= 2``
    columns has no exact check (:data:`JOINT_GAUSSIAN`), and an eps-MI scale read from the
    columns' variances has no meaning for a categorical column (Hamming metric)."""
    if noise == "gaussian" and scenario.metric is not None and scenario.metric.dimension > 1:
        return JOINT_GAUSSIAN
    if m.criterion == "eps-MI PP" and scenario.metric is not None and any(scenario.metric.categorical):
        return "eps-MI on several columns reads numeric variances: not for a categorical column"
    if m.name != "optimal" and scenario.metric is not None and any(scenario.metric.identity):
        return "a column kept in clear is released as it is: only the exact check (optimal) applies"
    if m.name != "optimal" and scenario.metric is not None and any(scenario.metric.missing):
        return "a missing number is released as missing (its pattern as it is): only optimal applies"
    return None


#: Seconds each mechanism of a comparison may take (:data:`pufferfish.defaults.TIME_LIMIT`).
TIME_LIMIT = _TIME_LIMIT


def check_time_limit(time_limit: Any) -> float:
    """``time_limit`` as seconds, finite and > 0 (ValueError naming it otherwise)."""
    try:
        value = float(time_limit)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"time_limit must be finite and > 0 seconds, got {time_limit!r}")
    return value


def _calibrate_one(
    scenario: Scenario,
    m: Mechanism,
    epsilon: float,
    delta: float,
    noise: str,
    secret_weights: Any,
    upper: Calibration | None = None,
    utility: Utility | None = None,
    time_limit: float = TIME_LIMIT,
) -> Calibration | MappingCalibration:
    """One applicable mechanism on validated arguments."""
    if m.mapping:  # pure eps implies (eps, delta): checked as pure eps
        util = utility or default_utility(scenario)
        mapped = mapping_calibration(scenario, epsilon, m.name, util, time_limit=time_limit)
        return mapped if delta == 0.0 else replace(mapped, delta=delta)
    if m.scale is None:
        return smallest_passing(
            scenario, epsilon, delta=delta, noise=noise, upper=upper, time_limit=time_limit
        )
    reason = uncheckable(scenario, m.criterion, noise, delta)
    if reason is not None:
        target = Target(m.name, m.source, m.criterion, noise, epsilon, delta, secret_weights)
        return unverified(target, m.scale(scenario, epsilon, delta, secret_weights), reason)
    if m.pure or scenario.kind == "joint":  # pure eps implies (eps, delta): checked as pure eps
        target = Target(m.name, m.source, m.criterion, noise, epsilon, 0.0)
        out = verified(scenario, target, m.scale(scenario, epsilon, 0.0, secret_weights))
        return out if delta == 0.0 else replace(out, delta=delta, checked_delta=0.0)
    target = Target(m.name, m.source, m.criterion, noise, epsilon, delta, secret_weights)
    return verified(scenario, target, m.scale(scenario, epsilon, delta, secret_weights))


def _edge(
    scenario: Scenario, mechanism: str, epsilon: Any, delta: Any, noise: str | None
) -> tuple[Mechanism, float, float, str]:
    """Validate the arguments of one calibration once: ``(mechanism, epsilon, delta, noise)``.

    Raises ValueError on a bad argument or a mechanism that does not apply (with the reason).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    m = lookup(mechanism)
    noise = check_noise(noise if noise is not None else (m.noise or "laplace"))
    reason = not_applicable(scenario, m, noise, delta, epsilon)
    if reason is not None:
        raise ValueError(f"{m.name} does not apply: {reason}")
    return m, epsilon, delta, noise


def calibrate(
    scenario: Scenario,
    epsilon: float,
    mechanism: str = "optimal",
    *,
    delta: float = 0.0,
    noise: str | None = None,
    secret_weights: Any = None,
) -> Calibration:
    """Calibrate one mechanism and check its scale exactly.

    Parameters
    ----------
    scenario : Scenario
        Pairs and priors (discrete or Gaussian mixtures).
    epsilon : float
        Finite and > 0 (nats).
    mechanism : str
        One of :data:`MECHANISMS` (default ``"optimal"``).
    delta : float
        In [0, 1) (default 0). Ignored by the eps-MI mechanisms.
    noise : {"laplace", "gaussian"}, optional
        Default: the mechanism's own (Laplace for ``optimal``).
    secret_weights : mapping or array_like, optional
        The secret's marginal over ``scenario.secrets`` (eps-MI mechanisms; default uniform).

    Returns
    -------
    Calibration
        The scale, its exact check and where it came from.

    Raises
    ------
    ValueError
        On a bad argument, a mechanism that does not apply (the reason is given) or a mapping
        mechanism (:func:`calibrate_mapping`).
    PrivacyCheckError
        If the scale fails its exact check after the safe-side steps (a false theorem or a bug).
    """
    m, epsilon, delta, noise = _edge(scenario, mechanism, epsilon, delta, noise)
    if m.mapping:
        raise ValueError(f"{m.name} is a randomized mapping, not noise: use calibrate_mapping")
    out = _calibrate_one(scenario, m, epsilon, delta, noise, secret_weights)
    assert isinstance(out, Calibration)
    return out


def calibrate_mapping(
    scenario: Scenario,
    epsilon: float,
    mechanism: str = "optimal-mapping",
    *,
    utility: Utility | None = None,
    delta: float = 0.0,
) -> MappingCalibration:
    """Calibrate one randomized mapping of a finite alphabet and check its matrix exactly.

    Parameters
    ----------
    scenario : Scenario
        Discrete priors (alphabet of 2 to :data:`~.mapping.MAPPING_MAX_K` values), possibly with
        prior sets (the worst case over them is checked).
    epsilon : float
        Finite and > 0 (nats).
    mechanism : str
        One of :data:`MAPPING_MECHANISMS` (default ``"optimal-mapping"``).
    utility : Utility, optional
        Objective and weights ``mu`` on the scenario's union support; default accuracy weighted
        by the average of the first prior's conditionals.
    delta : float
        In [0, 1); the check is pure eps (which implies every delta).

    Returns
    -------
    MappingCalibration
        The released (dyadic) matrix, its exact check, utility and solver data.

    Raises
    ------
    ValueError
        On a bad argument, a mechanism that is not a mapping, or an alphabet too small or too
        large (the message names the limit).
    PrivacyCheckError
        If the LP fails or no matrix passes the check.
    """
    m, epsilon, delta, _ = _edge(scenario, mechanism, epsilon, delta, None)
    if not m.mapping:
        raise ValueError(
            f"mechanism must be one of {', '.join(MAPPING_MECHANISMS)} (a randomized mapping), "
            f"got {mechanism!r}"
        )
    if utility is not None and not np.all(np.isin(scenario_support(scenario), utility.support)):
        raise ValueError("utility.support must hold the scenario's union support")
    out = _calibrate_one(scenario, m, epsilon, delta, "laplace", None, utility=utility)
    assert isinstance(out, MappingCalibration)
    return out


def calibrate_optimal(
    scenario: Scenario,
    epsilon: float,
    *,
    delta: float = 0.0,
    noise: str = "laplace",
    upper: Calibration | float | None = None,
    time_limit: float = 300.0,
) -> Calibration:
    """The smallest scale whose exact check passes for the target (eps, delta).

    Parameters
    ----------
    scenario : Scenario
        Pairs and priors (discrete or Gaussian mixtures).
    epsilon : float
        Finite and > 0.
    delta : float
        In [0, 1). ``0`` asks for pure eps (Laplace noise only).
    noise : {"laplace", "gaussian"}
    upper : Calibration or float, optional
        A scale to bracket from (see :func:`.search.smallest_passing`).
    time_limit : float
        Seconds (default 300).

    Returns
    -------
    Calibration
        See :func:`.search.smallest_passing`.

    Raises
    ------
    ValueError
        On a bad argument, or Gaussian noise with ``delta = 0``.
    PrivacyCheckError
        If no passing scale is found, or none within ``time_limit``.
    """
    _, epsilon, delta, noise = _edge(scenario, "optimal", epsilon, delta, noise)
    return smallest_passing(scenario, epsilon, delta=delta, noise=noise, upper=upper, time_limit=time_limit)


def compare(
    scenario: Scenario,
    epsilons: float | Iterable[float],
    mechanisms: Sequence[str] | None = None,
    *,
    delta: float = 0.0,
    noise: str = "laplace",
    secret_weights: Any = None,
    utility: Utility | None = None,
) -> tuple[Calibration | MappingCalibration | Skipped, ...]:
    """Several mechanisms at several budgets; those that do not apply with the reason.

    Parameters
    ----------
    scenario : Scenario
    epsilons : float or iterable of float
        Each finite and > 0.
    mechanisms : sequence of str, optional
        Names from :data:`MECHANISMS`; those that do not apply come back as :class:`Skipped`.
        Default: every registered (eps, delta)-PP mechanism that applies to these priors, noise and
        delta (the eps-MI mechanisms give another guarantee; name them to include them).
    delta : float
        In [0, 1).
    noise : {"laplace", "gaussian"}
    secret_weights : mapping or array_like, optional
        The secret's marginal (eps-MI mechanisms).
    utility : Utility, optional
        Of the mapping mechanisms (see :func:`calibrate`); they are compared when named.

    Returns
    -------
    tuple of Calibration, MappingCalibration or Skipped
        Ordered by epsilon, then mechanism. A mechanism that does not apply, or whose scale fails
        its exact check (a finding about its theorem), is a :class:`Skipped` with the reason.
        ``optimal`` brackets from the smallest passing scale found before it at the same epsilon.

    Raises
    ------
    ValueError
        On a bad argument or an unknown mechanism.
    """
    eps_list = check_epsilons([epsilons] if isinstance(epsilons, (int, float)) else epsilons)
    return run_comparison(
        scenario,
        eps_list,
        check_mechanisms(mechanisms),
        delta=check_delta(delta),
        noise=check_noise(noise),
        secret_weights=secret_weights,
        utility=utility,
    )


def check_mechanisms(mechanisms: Sequence[str] | None) -> tuple[Mechanism, ...] | None:
    """The registry entries named by ``mechanisms``, or None (the default set of :func:`compare`).

    Raises
    ------
    ValueError
        On an unknown name or an empty list.
    """
    if mechanisms is None:
        return None
    mechs = tuple(lookup(m) for m in mechanisms)
    if not mechs:
        raise ValueError("mechanisms needs at least one name, got none")
    return mechs


def run_comparison(
    scenario: Scenario,
    epsilons: Sequence[float],
    mechanisms: tuple[Mechanism, ...] | None,
    *,
    delta: float,
    noise: str,
    secret_weights: Any = None,
    utility: Utility | None = None,
    time_limit: float = TIME_LIMIT,
) -> tuple[Calibration | MappingCalibration | Skipped, ...]:
    """:func:`compare` on arguments already validated at the edge (no argument is re-checked).

    ``mechanisms`` from :func:`check_mechanisms`: named entries (inapplicable ones come back as
    :class:`Skipped`), or None for every applicable (eps, delta)-PP mechanism that adds noise. A
    mechanism that raises ValueError on this input (one it is not defined for) or whose scale
    fails its check comes back as :class:`Skipped` with the reason: one row, never the end of the
    comparison (issue 29).
    """
    named = mechanisms is not None
    mechs = mechanisms or tuple(
        m for m in REGISTRY.values() if m.criterion == "(eps, delta)-PP" and not m.mapping
    )
    out: list[Calibration | MappingCalibration | Skipped] = []
    for eps in epsilons:
        best: Calibration | None = None
        for m in mechs:
            reason = not_applicable(scenario, m, noise, delta, eps)
            if reason is not None:
                if named:
                    out.append(Skipped(m.name, eps, reason, delta))
                continue
            try:
                res = _calibrate_one(
                    scenario, m, eps, delta, noise, secret_weights, best, utility, time_limit
                )
            except TimeLimitError as exc:  # nothing was checked: never "fails the check" (issue 33)
                reason = f"did not finish: {exc}; raise the time limit (--time-limit, time_limit)"
                out.append(Skipped(m.name, eps, reason, delta))
                continue
            except MemoryLimitError as exc:  # refused before allocating (issue 34): "not run: ..."
                out.append(Skipped(m.name, eps, str(exc), delta))
                continue
            except PrivacyCheckError as exc:
                out.append(Skipped(m.name, eps, f"fails the exact privacy check: {exc}", delta))
                continue
            except ValueError as exc:  # the arguments were validated at the edge: this input is
                # one the mechanism is not defined for; its row says why, the others still answer
                out.append(Skipped(m.name, eps, f"not applicable: {exc}", delta))
                continue
            if (
                isinstance(res, Calibration)
                and res.criterion == "(eps, delta)-PP"
                and res.scale > 0
                and (best is None or res.scale < best.scale)
            ):
                best = res
            out.append(res)
    return tuple(out)


def mechanism_table() -> str:
    """The registry as a reStructuredText list table (for the documentation).

    Returns
    -------
    str
        One row per mechanism: name, noise, criterion, priors and source.
    """
    rows = [
        (f"``{m.name}``", m.noise or "either", m.criterion, m.priors, m.source) for m in REGISTRY.values()
    ]
    return list_table(("mechanism", "noise", "criterion", "priors", "source"), rows)


def list_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A reStructuredText ``list-table`` with a header row (one line per cell), ending in a newline.

    Serves the documentation tables generated from the registries (:func:`mechanism_table`,
    :func:`pufferfish.multiuser.user_mechanism_table`).
    """
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in (headers, *rows):
        lines += [("   * - " if k == 0 else "     - ") + cell for k, cell in enumerate(row)]
    return "\n".join(lines) + "\n"
