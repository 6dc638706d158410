"""Laplace calibration for multi-user summation queries (seed 000 sec 4): one user, every user,
and the release of the sum.

Every calibrator returns a scale ``theta`` for the pair set of one target user and checks it
against the exact privacy loss (SPEC sec 2.1) of the query's two conditional distributions,
computed from the whole system, through the one check-and-search path of
:mod:`pufferfish.calibration`. The closed forms of seed 000 are in :mod:`.theorems`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from pufferfish._checks import check_epsilon, check_epsilons
from pufferfish.calibration.check import from_loss, passes
from pufferfish.calibration.registry import calibrate, calibrate_optimal
from pufferfish.calibration.result import Calibration, PrivacyCheckError, Skipped, TimeLimitError
from pufferfish.calibration.search import Proposal, Target, first_passing, verified
from pufferfish.loss.exact import PrivacyLoss, own_pair_losses, padded, privacy_loss
from pufferfish.multiuser.system import (
    SYSTEM_PRIOR,
    MultiUserSystem,
    User,
    check_fit,
    check_pair_set,
    others_distribution,
    own_pair,
    pair_scenario,
    secret_names,
)
from pufferfish.multiuser.theorems import GENERAL, THEOREMS, check_mechanism, not_applicable
from pufferfish.priors.distributions import RELEASE_EXPONENT, DiscretePrior
from pufferfish.priors.scenario import Scenario


@dataclass(frozen=True)
class MultiUserCalibration:
    """A calibrated scale for one user's pair set of a summation query, with its exact check.

    Attributes
    ----------
    user : str
        The target user ``i``.
    pair_set : str
        One of :data:`~pufferfish.multiuser.PAIR_SETS`.
    source : str
        Paper, theorem and equation of the mechanism.
    uses_other_users : bool
        Whether the scale itself depends on the other users (the check always does).
    calibration : Calibration
        The scale and its exact privacy check on the query's conditional distributions
        (``calibration.check``); ``calibration.mechanism`` is the mechanism name.
    """

    user: str
    pair_set: str
    source: str
    uses_other_users: bool
    calibration: Calibration

    @property
    def mechanism(self) -> str:
        """Mechanism name (see :data:`MULTIUSER_MECHANISMS`)."""
        return self.calibration.mechanism

    @property
    def epsilon(self) -> float:
        """Target budget (nats)."""
        return self.calibration.epsilon

    @property
    def scale(self) -> float:
        """Laplace scale ``theta`` (noise variance ``2 theta^2``)."""
        return self.calibration.scale

    @property
    def checked_loss(self) -> float:
        """Exact privacy loss of the query at :attr:`scale` (``<= epsilon``)."""
        assert self.calibration.checked_loss is not None  # Laplace, pure eps: always checked
        return self.calibration.checked_loss

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: ``mechanism``, ``epsilon``, ``scale``, ``checked_loss`` first."""
        inner = self.calibration.to_dict()
        out: dict[str, Any] = {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "scale": self.scale,
            "checked_loss": self.checked_loss,
            "user": self.user,
            "pair_set": self.pair_set,
            "source": self.source,
            "uses_other_users": self.uses_other_users,
        }
        for key, value in inner.items():
            out.setdefault(key, value)
        return out


# ---------------------------------------------------------------------------------------------
# One user


def calibrate_user(
    system: MultiUserSystem,
    user: str,
    pair_set: str,
    epsilon: float,
    mechanism: str = "optimal",
    *,
    others: DiscretePrior | None = None,
) -> MultiUserCalibration:
    """Calibrate Laplace noise on the sum for one user's pair of secrets, and check it exactly.

    Parameters
    ----------
    system : MultiUserSystem
    user : str
        Name of the target user ``i``.
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}
        Seed 000 sec 4 (see :func:`~pufferfish.multiuser.query_priors`).
    epsilon : float
        Budget, finite and > 0.
    mechanism : str
        One of :data:`MULTIUSER_MECHANISMS` that applies (see :func:`not_applicable`).
    others : DiscretePrior, optional
        The other users' sum ``R_i``, if already computed.

    Returns
    -------
    MultiUserCalibration
        The scale and its exact check on the query's two conditional distributions.

    Raises
    ------
    ValueError
        On a bad argument or a mechanism that does not apply (the message says why).
    PrivacyCheckError
        If the scale fails the exact check after a move of at most 1e-6 to the safe side.
    """
    epsilon = check_epsilon(epsilon)
    u = system.user(user)
    reason = not_applicable(u, pair_set, mechanism)
    if reason is not None:
        raise ValueError(f"mechanism {mechanism} does not apply to user {user!r}: {reason}")
    r = others_distribution(system, user) if others is None else others
    scenario = pair_scenario(system, pair_set, [user], others={user: r})
    return _calibrate_on(scenario, r, u, pair_set, epsilon, mechanism)


def _calibrate_on(
    scenario: Scenario,
    others: DiscretePrior,
    u: User,
    pair_set: str,
    epsilon: float,
    mechanism: str,
    *,
    upper: Calibration | None = None,
) -> MultiUserCalibration:
    """One applicable mechanism on a built query scenario (``upper``: a relaxed result to bracket)."""
    m = check_mechanism(mechanism)
    if m.name == "optimal":
        result = calibrate_optimal(scenario, epsilon, upper=upper)
    elif m.scale is None:
        result = calibrate(scenario, epsilon, m.name)
    else:
        ts = m.scale(u, epsilon, others)
        target = Target(m.name, m.source, "(eps, delta)-PP", "laplace", epsilon)
        proposal = Proposal(ts.scale, SYSTEM_PRIOR, secret_names(u, pair_set), ts.decided_by, ts.root)
        result = verified(scenario, target, proposal)
    return MultiUserCalibration(
        user=u.name,
        pair_set=pair_set,
        source=m.source,
        uses_other_users=m.uses_other_users,
        calibration=result,
    )


def compare_user(
    system: MultiUserSystem,
    user: str,
    pair_set: str,
    epsilons: float | Iterable[float],
    mechanisms: Sequence[str] | None = None,
) -> tuple[MultiUserCalibration | Skipped, ...]:
    """Every applicable mechanism for one user's pair set at several budgets.

    Parameters
    ----------
    system : MultiUserSystem
    user : str
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}
    epsilons : float or iterable of float
        Budgets, each finite and > 0.
    mechanisms : sequence of str, optional
        Default: the pair set's theorems, then ``kantorovich``, ``relaxed``, ``optimal``.

    Returns
    -------
    tuple of MultiUserCalibration or Skipped
        Ordered by epsilon, then mechanism. A mechanism that does not apply, or whose scale fails
        the exact check (a finding about its theorem), is a :class:`Skipped` with the reason.

    Raises
    ------
    ValueError
        On a bad argument, or a pair set that does not fit the user's data.
    """
    check_pair_set(pair_set)
    eps_list = check_epsilons([epsilons] if isinstance(epsilons, (int, float)) else epsilons)
    u = system.user(user)
    check_fit(u, pair_set)
    mechs = tuple(THEOREMS[pair_set] + GENERAL if mechanisms is None else mechanisms)
    if not mechs:
        raise ValueError("mechanisms needs at least one name, got none")
    for m in mechs:
        check_mechanism(m)
    r = others_distribution(system, user)
    scenario = pair_scenario(system, pair_set, [user], others={user: r})  # built once, used by all
    out: list[MultiUserCalibration | Skipped] = []
    for eps in eps_list:
        relaxed: Calibration | None = None
        for m in mechs:
            reason = not_applicable(u, pair_set, m)
            if reason is not None:
                out.append(Skipped(m, eps, reason))
                continue
            try:
                res = _calibrate_on(scenario, r, u, pair_set, eps, m, upper=relaxed)
            except TimeLimitError as exc:  # nothing was checked: never "fails the check" (issue 33)
                out.append(Skipped(m, eps, f"did not finish: {exc}"))
                continue
            except PrivacyCheckError as exc:
                out.append(Skipped(m, eps, f"fails the exact privacy check: {exc}"))
                continue
            except ValueError as exc:  # arguments checked above: a data condition of this mechanism
                # (e.g. lemma2 needs the others' sum on the integers); its row says why (issue 29)
                out.append(Skipped(m, eps, f"not applicable: {exc}"))
                continue
            if m == "relaxed":
                relaxed = res.calibration
            out.append(res)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Every user of a system


@dataclass(frozen=True)
class SystemCalibration:
    """The optimal scale for a pair set over every user of a system, with how it was certified.

    Attributes
    ----------
    pair_set : str
    epsilon : float
    scale : float
        ``max_i theta_i``: the smallest scale whose exact loss is ``<= epsilon`` for every user's
        pair (each ``theta_i`` is user ``i``'s optimal scale).
    user : str
        The user whose pair decides the scale.
    lower_bound : float
        ``max_i`` of the tail bound (below it some user's loss exceeds ``epsilon``).
    users : int
        Number of users.
    certified_alone : int
        Users certified by the exact loss of their own pair without the others (post-processing).
    checked_query : int
        Users whose optimal scale was computed on the full query distributions.
    deciding : MultiUserCalibration or None
        The full-query calibration of the deciding user, when it was computed.
    query_check : PrivacyLoss or None
        Exact loss of the deciding user's full query (seed 000 eq 7-9) at :attr:`scale`, when it
        was evaluated (``check_query``); the scale was moved up (at most 1e-6) until it passed.
    seconds : float
        Wall time of the calibration.

    Notes
    -----
    Two bounds per user need only its own data. *Lower*: beyond the ends of the support the
    query's density ratio is ``E[e^{D/theta}]``-based (``M_P(1/theta) / M_Q(1/theta)`` for ``P-Q``,
    ``E[e^{+-D/theta}]`` for ``P-bot``), whatever the other users, so ``theta_i`` is at least the
    scale where that tail ratio reaches ``e^eps``. *Upper*: adding the independent sum of the
    other users is post-processing of ``D_i + N``, so the query's loss never exceeds the loss of
    the user's own pair (``P_i`` vs ``delta_0`` or ``Q_i``) with the same noise; that loss is exact
    and O(``|supp P_i|``). Users whose own-pair loss at the current scale is ``<= eps`` are done;
    the rest are calibrated on the full query (seed 000 eq 7-9), largest first.
    """

    pair_set: str
    epsilon: float
    scale: float
    user: str
    lower_bound: float
    users: int
    certified_alone: int
    checked_query: int
    deciding: MultiUserCalibration | None
    query_check: PrivacyLoss | None
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "mechanism": "optimal",
            "pair_set": self.pair_set,
            "epsilon": self.epsilon,
            "scale": self.scale,
            "user": self.user,
            "lower_bound": self.lower_bound,
            "users": self.users,
            "certified_alone": self.certified_alone,
            "checked_query": self.checked_query,
            "deciding": None if self.deciding is None else self.deciding.to_dict(),
            "query_check": None
            if self.query_check is None
            else {
                "loss": self.query_check.loss,
                "error_bound": self.query_check.error_bound,
                "worst_y": self.query_check.worst_y,
            },
            "seconds": self.seconds,
        }


def _own_pairs(system: MultiUserSystem, pair_set: str) -> list[tuple[DiscretePrior, DiscretePrior]]:
    """Each user's own pair of value distributions (``P_i`` vs ``delta_0`` / ``Q_i`` / points)."""
    out = [own_pair(u, pair_set) for u in system.users]
    return out


def _tail_lower(
    first: Sequence[DiscretePrior], second: Sequence[DiscretePrior], epsilon: float
) -> NDArray[np.float64]:
    """Per pair, the scale below which a tail ratio of the query exceeds ``e^eps`` (lower bound).

    Vectorised bisection on ``log u``, ``u = 1/theta``, over all pairs at once (100 halvings:
    relative precision ~1e-15 of ``u`` within ``[1e-30, 1e30]``); the result is the upper end of
    the final bracket in ``u``, hence never above the true bound in ``theta``.
    """
    xa, la = padded(first)
    xb, lb = padded(second)

    def excess(u: NDArray[np.float64]) -> NDArray[np.float64]:
        best = np.zeros(u.size)
        for sign in (1.0, -1.0):
            a = logsumexp(la + sign * u[:, None] * xa, axis=1)
            b = logsumexp(lb + sign * u[:, None] * xb, axis=1)
            best = np.maximum(best, np.abs(a - b))
        return best - epsilon

    lo = np.full(len(first), math.log(1e-30))
    hi = np.full(len(first), math.log(1e30))
    never = excess(np.exp(hi)) <= 0.0  # tails never separate: no lower bound from them
    for _ in range(110):
        mid = 0.5 * (lo + hi)
        bad = excess(np.exp(mid)) > 0.0
        hi = np.where(bad, mid, hi)
        lo = np.where(bad, lo, mid)
    out = 1.0 / np.exp(hi)
    out[never] = 0.0
    return out


#: Largest move to the safe side of a bound in :func:`calibrate_system` (rounding, not a gap).
_NUDGE = 1e-6


def calibrate_system(
    system: MultiUserSystem, pair_set: str, epsilon: float, *, check_query: bool | None = None
) -> SystemCalibration:
    """The optimal Laplace scale for ``pair_set`` over every user of the system.

    Parameters
    ----------
    system : MultiUserSystem
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}
        Every user must fit it (e.g. carry an alternative for ``P-Q``).
    epsilon : float
        Budget, finite and > 0.
    check_query : bool, optional
        Also evaluate the exact loss of the deciding user's *full* query (the other users' sum by
        :func:`~pufferfish.multiuser.sum_distribution`) and move the scale up until it passes.
        Default: only when the system is small (total support size <= 20,000); on 10^5 users
        this one convolution dominates the run time.

    Returns
    -------
    SystemCalibration
        ``max_i theta_i`` of the users' optimal scales, the deciding user, and how each user was
        certified (see the Notes of :class:`SystemCalibration`).

    Raises
    ------
    ValueError
        On a bad argument or a user that does not fit the pair set.
    PrivacyCheckError
        If a full-query calibration fails its exact check (a bug).

    Notes
    -----
    Seed 000 sec 4 with the exact loss of SPEC sec 2.1. Only users whose own tail bound and
    own-pair loss leave the answer open are convolved with the others; for ``ab``, ``a-bot`` and
    one-signed ``P-bot`` values the two bounds meet (Thm 1-3 are tight), so no user needs the
    others' sum.
    """
    start = time.perf_counter()
    check_pair_set(pair_set)
    epsilon = check_epsilon(epsilon)
    pairs = _own_pairs(system, pair_set)
    first = [a for a, _ in pairs]
    second = [b for _, b in pairs]
    lower = _tail_lower(first, second, epsilon)
    k_lo = int(np.argmax(lower))
    scale = float(lower[k_lo])
    deciding_user = system.users[k_lo].name
    # Move the tail bound to the safe side of its own user's exact own-pair check (1e-6 at most).
    a0, b0 = pairs[k_lo]
    # The tail bound is tight only for some pair sets: a nudge beyond 1e-6 would be a loose bound's
    # gap, not rounding, so the user is then left open and calibrated exactly below.
    found = first_passing(
        scale, lambda trial: passes(own_pair_losses([a0], [b0], trial)[0], 0.0, epsilon), max_step=_NUDGE
    )
    if found is not None:
        scale = found[0]
    own = own_pair_losses(first, second, scale)
    open_users = np.flatnonzero(own > epsilon).tolist()
    alone = len(pairs) - len(open_users)
    deciding: MultiUserCalibration | None = None
    checked = 0
    if open_users:
        # Largest own-pair optimum first: the users most likely to raise the scale.
        uppers = {k: calibrate(Scenario.single(*pairs[k]), epsilon, "optimal").scale for k in open_users}
        for k in sorted(open_users, key=lambda j: -uppers[j]):
            if uppers[k] <= scale:
                alone += 1
                continue
            res = calibrate_user(system, system.users[k].name, pair_set, epsilon, "optimal")
            checked += 1
            if res.scale > scale:
                scale, deciding_user, deciding = res.scale, res.user, res
    query_check = None
    if check_query is None:
        check_query = sum(u.prior.size for u in system.users) <= 20_000
    if deciding is not None:
        query_check = deciding.calibration.check
    elif check_query:
        scenario = pair_scenario(system, pair_set, [deciding_user])
        base = scale
        seen: dict[float, PrivacyLoss] = {}

        def query_passes(trial: float) -> bool:
            seen[trial] = privacy_loss(scenario, trial)
            return from_loss(seen[trial]).passes(epsilon)

        found = first_passing(base, query_passes, max_step=_NUDGE)
        if found is None:
            last = seen[max(seen)]
            raise PrivacyCheckError(
                f"system scale {base!r} fails the exact check of user {deciding_user!r}'s full query: "
                f"loss {last.loss!r} (+ bound {last.error_bound:.3g}) > {epsilon!r}"
            )
        scale = found[0]
        query_check = seen[scale]
    return SystemCalibration(
        pair_set=pair_set,
        epsilon=epsilon,
        scale=scale,
        user=deciding_user,
        lower_bound=float(lower[k_lo]),
        users=len(system.users),
        certified_alone=alone,
        checked_query=checked,
        deciding=deciding,
        query_check=query_check,
        seconds=time.perf_counter() - start,
    )


# ---------------------------------------------------------------------------------------------
# Releasing the sum


@dataclass(frozen=True)
class SumRelease:
    """A noisy summation query and the calibration behind it.

    Attributes
    ----------
    value : float
        The released ``X + N`` (the true sum is not kept).
    scale : float
        Laplace scale ``theta`` of ``N``.
    epsilon : float
    pair_set : str
    user : str or None
        The target user, or ``None`` when the scale covers every user (:func:`calibrate_system`).
    mechanism : str
    noise : dict
        How the noise was drawn (:meth:`~pufferfish.noise.samplers.NoisyValues.describe`).
    calibration : MultiUserCalibration or SystemCalibration
    together : JointGuarantee or None
        With a ledger (issue 42): the guarantee of its releases of this sum together.
    """

    value: float
    scale: float
    epsilon: float
    pair_set: str
    user: str | None
    mechanism: str
    noise: dict[str, Any]
    calibration: MultiUserCalibration | SystemCalibration
    together: Any = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "released_sum": self.value,
            "scale": self.scale,
            "epsilon": self.epsilon,
            "pair_set": self.pair_set,
            "user": self.user,
            "mechanism": self.mechanism,
            "noise": self.noise,
            "calibration": self.calibration.to_dict(),
            "together": None if self.together is None else self.together.to_dict(),
            # what is published (issue 41): the noisy sum only, the one value the check covers
            "output_columns": {
                "written": ["released_sum"],
                "covered_by_the_guarantee": ["released_sum"],
                "not_written": "the true sum and every user's value",
            },
        }


def release_sum(
    system: MultiUserSystem,
    value: float,
    pair_set: str,
    epsilon: float,
    *,
    user: str | None = None,
    mechanism: str = "optimal",
    rng: np.random.Generator | int | None = None,
    ledger: Any = None,
    budget: float | None = None,
) -> SumRelease:
    """Release the sum of the users' reports with calibrated Laplace noise.

    Parameters
    ----------
    system : MultiUserSystem
        The users and their distributions (the adversary's prior, seed 000 sec 3).
    value : float
        The true value of the summation query ``X = sum_i D_i`` (finite), as the nearest float to
        the exact sum of the reports (``math.fsum(reports)``): the distribution the scale is
        checked on is that of this float rounded to the release grid
        (:func:`~pufferfish.multiuser.sum_distribution`).
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}
    epsilon : float
        Budget, finite and > 0.
    user : str, optional
        Protect this user's pair only. Default: every user (:func:`calibrate_system`, which
        needs ``mechanism = "optimal"``).
    mechanism : str
        One of :data:`MULTIUSER_MECHANISMS` (with ``user``), or ``"optimal"``.
    rng : numpy.random.Generator, int or None
        ``None``: the secure exact discrete Laplace sampler (:func:`pufferfish.noise.samplers.add_laplace`;
        scale rounded up by at most a relative 2^-40, which cannot raise the pure-eps loss, SPEC
        sec 2.1; above a scale of 2^10 the sum is rounded to the sampler's grid ``2^k``, coarser
        than the release grid, which can add ``2^k / b <= 2^-40`` to the loss: the scale is then
        calibrated for ``eps - 2^-39``, stated in :attr:`SumRelease.noise`). A Generator or seed:
        NumPy, **not secure**.
    ledger, budget : str or pathlib.Path, float, optional
        Record the release in this ledger (issue 42); the sums of one system released more than
        once are checked together exactly (:func:`pufferfish.ledger.guarantee.sum_joint`). With
        ``budget``, a release over it is refused before the noise is drawn
        (:class:`~pufferfish.ledger.record.BudgetError`).

    Returns
    -------
    SumRelease

    Raises
    ------
    ValueError
        If ``value`` is not finite or another argument is bad.
    PrivacyCheckError
        If the scale fails the exact check.
    """
    from pufferfish.noise.samplers import add_laplace, exact_grid, moved_centres_term

    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"value must be a finite number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"value must be a finite number, got {value!r}")
    if user is None and mechanism != "optimal":
        raise ValueError(f"without a user, mechanism must be optimal (every user), got {mechanism!r}")
    epsilon = check_epsilon(epsilon)

    def calibrated(eps: float) -> MultiUserCalibration | SystemCalibration:
        if user is None:
            return calibrate_system(system, pair_set, eps)
        return calibrate_user(system, user, pair_set, eps, mechanism)

    calib = calibrated(epsilon)
    noise: dict[str, Any] = {}
    k = exact_grid(calib.scale)[0] if calib.scale > 0 and rng is None else RELEASE_EXPONENT
    if k > RELEASE_EXPONENT:
        # the secure sampler rounds the sum to its grid 2^k (k > -30 above a scale of 2^10): each
        # centre moves by <= 2^(k-1), the loss by <= 2^k / b <= 2^-40 (noise.moved_centres_term);
        # calibrate for eps - 2^-39 so that the loss of what is released is < eps
        calib = calibrated(epsilon - _GRID_LOSS)
        k, _, drawn = exact_grid(calib.scale)
        term = moved_centres_term("laplace", epsilon, False, k, drawn)
        if calib.epsilon + term > epsilon:  # pragma: no cover - term <= 2^-40 by grid_exponent
            raise PrivacyCheckError(f"the grid 2^{k} adds {term!r} to the loss at scale {drawn!r}")
        noise = {"calibrated_at_epsilon": calib.epsilon, "rounding_loss_bound": term}
    book = None
    if ledger is not None or budget is not None:  # checked before the noise is drawn
        book = _ledger_plan(system, pair_set, user, mechanism, epsilon, calib.scale, rng, ledger, budget)
    noisy = add_laplace(np.array([x]), calib.scale, rng=rng)
    if book is not None:  # no file: the value is returned once its entry is recorded
        from pufferfish.ledger.record import reserve, settle

        settle(book[0].ledger, reserve(book[1], book[0], None, None), published=True)
    return SumRelease(
        value=float(noisy.values[0]),
        scale=calib.scale,
        epsilon=epsilon,
        pair_set=pair_set,
        user=user,
        mechanism=mechanism,
        noise={**noisy.describe(), **noise},
        calibration=calib,
        together=None if book is None else book[1].joint,
    )


def _ledger_plan(
    system: MultiUserSystem, pair_set: str, user: str | None, mechanism: str, epsilon: float, scale: float,
    rng: Any, ledger: Any, budget: Any,
) -> tuple[Any, Any]:  # fmt: skip
    """The ledger context and plan of a released sum (:func:`release_sum`)."""
    from pufferfish.ledger.record import LedgerContext, check_budget, plan_other
    from pufferfish.ledger.store import Ledger
    from pufferfish.multiuser.ledgered import sum_body
    from pufferfish.noise.samplers import exact_grid

    spent = check_budget(budget)
    if ledger is None:
        raise ValueError(f"budget needs a ledger to count what was released, got budget {budget!r}")
    exponent, drawn = None, scale
    if rng is None and scale > 0:
        exponent, _, drawn = exact_grid(scale)
    views = [{"column": "sum", "kind": "laplace", "scale": drawn, "exponent": exponent}]
    body = sum_body(system, pair_set, user, mechanism, epsilon, views, insecure=rng is not None)
    context = LedgerContext(Ledger(ledger), spent, None)  # type: ignore[arg-type]
    return context, plan_other(context, body)


#: Margin kept for the loss that rounding the sum to the secure sampler's grid may add
#: (``2^k / b <= 2^-40``, :func:`pufferfish.noise.samplers.grid_exponent`): a release at a scale above
#: ``2^10`` is calibrated for ``eps - 2^-39``.
_GRID_LOSS = 2.0**-39
