"""Pufferfish scenarios: adversaries' priors and the discriminative pairs.

* :class:`AdversaryPrior`: one adversary's prior, a named map ``secret -> prior`` (all discrete,
  all Gaussian mixtures, or all joint priors of several columns,
  :class:`~pufferfish.priors.joint.JointPrior`);
* :class:`Scenario`: the discriminative pairs and one or more adversary priors (and, for joint
  priors, the metric). Every guarantee computed on a scenario is a maximum over its pairs and
  its priors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Union

import numpy as np

from pufferfish.priors.balls import check_balls
from pufferfish.priors.distributions import (
    RELEASE_EXPONENT,
    DiscretePrior,
    GaussianMixturePrior,
    Prior,
    on_grid,
    to_grid,
)
from pufferfish.priors.joint import JointPrior, Metric
from pufferfish.priors.sets import PriorSet, check_sets, set_summary

#: A conditional distribution of one public value or of a tuple of public columns.
AnyPrior = Union[DiscretePrior, GaussianMixturePrior, JointPrior]  # noqa: UP007


@dataclass(frozen=True)
class AdversaryPrior:
    """One adversary's prior ``rho``: a conditional distribution of ``X`` for each secret.

    Parameters
    ----------
    name : str
        A label used in results to say which prior decided a scale (e.g. ``"empirical"``).
    conditionals : mapping of str to DiscretePrior, GaussianMixturePrior or JointPrior
        ``conditionals[s] = P_{X|S}(. | s, rho)`` for every secret ``s`` this prior speaks of;
        all of one kind (joint priors: all of one dimension).
    sets : mapping of str to PriorSet or JointBall, optional
        A confidence set around each conditional, all of one kind on one alphabet: a
        :class:`~pufferfish.priors.sets.PriorSet` around a discrete prior, a
        :class:`~pufferfish.priors.balls.JointBall` around a joint one. The adversary may hold any
        prior in them, and every check takes the worst case over them. ``None``: the
        conditionals themselves.
    impossible : iterable of str, optional
        Secrets of probability 0 under this prior (no conditional exists for them; e.g. a state
        a Markov chain never visits at a time). A pair with a side in it constrains nothing for
        this prior (Definition 1 of seed 004: the condition holds "for all priors and pairs with
        ``P(s_i), P(s_j) > 0``"; Kifer and Machanavajjhala 2014, Def 3.4), and
        :meth:`Scenario.pairs_for` leaves it out for this prior only. Default: none.

    Raises
    ------
    ValueError
        If ``name`` is empty, ``conditionals`` is empty, or a secret is both given a conditional
        and declared impossible.
    TypeError
        If a value of ``conditionals`` is not a prior, or discrete and Gaussian-mixture priors are
        mixed.

    Notes
    -----
    Seed 001 sec 2 ("each rho uniquely identifies one of them"); SPEC sec 0.
    """

    name: str
    conditionals: Mapping[str, AnyPrior]
    sets: Mapping[str, Any] | None = None  # PriorSet (one column) or JointBall (several)
    impossible: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        conds = dict(self.conditionals)
        if not conds:
            raise ValueError("conditionals must name at least one secret, got none")
        impossible = frozenset(str(s) for s in self.impossible)
        both = sorted(impossible & set(conds))
        if both:
            raise ValueError(
                f"impossible secrets have no conditional; prior {self.name!r} gives one for {both}"
            )
        object.__setattr__(self, "impossible", impossible)
        if self.sets is not None:
            if all(isinstance(p, JointPrior) for p in conds.values()):
                object.__setattr__(self, "sets", MappingProxyType(check_balls(self.sets, conds)))
            elif not all(isinstance(p, DiscretePrior) for p in conds.values()):
                raise TypeError("sets need discrete (DiscretePrior) or joint (JointPrior) conditionals")
            else:
                object.__setattr__(self, "sets", MappingProxyType(check_sets(self.sets, conds)))
        for secret, prior in conds.items():
            if not isinstance(prior, (DiscretePrior, GaussianMixturePrior, JointPrior)):
                raise TypeError(
                    f"conditionals[{secret!r}] must be a DiscretePrior, a GaussianMixturePrior or a "
                    f"JointPrior, got {type(prior).__name__}"
                )
        kinds = {type(p).__name__ for p in conds.values()}
        if len(kinds) > 1:
            raise TypeError(f"conditionals must all be of one kind, got {sorted(kinds)}")
        dims = {p.dimension for p in conds.values() if isinstance(p, JointPrior)}
        if len(dims) > 1:
            raise ValueError(f"joint priors must all have one dimension, got {sorted(dims)}")
        object.__setattr__(self, "conditionals", MappingProxyType(conds))

    @property
    def kind(self) -> str:
        """``"discrete"``, ``"gaussian-mixture"`` or ``"joint"`` (:class:`JointPrior`)."""
        first = next(iter(self.conditionals.values()))
        if isinstance(first, JointPrior):
            return "joint"
        return "discrete" if isinstance(first, DiscretePrior) else "gaussian-mixture"

    def set_summary(self) -> dict[str, Any]:
        """For which priors a check of this adversary holds
        (:func:`pufferfish.priors.sets.set_summary` of :attr:`sets`)."""
        return set_summary(self.sets)


@dataclass(frozen=True)
class Scenario:
    """A pufferfish scenario: discriminative pairs of secrets and the adversaries' priors.

    Parameters
    ----------
    pairs : iterable of (str, str)
        The discriminative pair set ``S``: pairs ``(s_i, s_j)`` of distinct secrets an adversary
        must not tell apart. Both directions of the inequality are always enforced.
    priors : iterable of AdversaryPrior
        One or more priors; each must give a conditional distribution for every secret that
        appears in ``pairs``, or declare it impossible (:attr:`AdversaryPrior.impossible`: the
        pairs of that secret are then checked under the other priors only,
        :meth:`pairs_for`). Prior names must be distinct.
    metric : Metric, optional
        For joint priors of ``d`` columns only: the weighted L1 metric ``d(x, x') = sum_k |x_k -
        x'_k| / w_k`` whose units put the columns on one scale (default: every ``w_k = 1``).
        Product Laplace noise of scale ``b`` adds ``Laplace(b w_k)`` to column ``k``.
    model : object, optional
        The model the priors were computed from, for the mechanisms that need more than the
        priors (the Markov quilt mechanisms read a :class:`pufferfish.markov.CountModel`); kept
        by :meth:`without_sets` and :meth:`on_grid`. Default None.

    Attributes
    ----------
    secrets : tuple of str
        The secrets appearing in ``pairs``, in order of first appearance.

    Raises
    ------
    ValueError
        If there is no pair, a pair is not two distinct secrets, no prior is given, two priors
        share a name, a prior lacks a secret of a pair (neither a conditional nor declared
        impossible), no pair has both sides possible under some prior, or ``metric`` is given
        for priors that are not joint or has another dimension.

    Notes
    -----
    Definition of (eps, S)-pufferfish privacy: seed 001 eq (1); SPEC sec 0. Every result computed
    on a scenario is the maximum over ``pairs`` and ``priors`` and says which pair and prior
    decided it.

    Examples
    --------
    >>> p = AdversaryPrior("rho", {"a": DiscretePrior([0, 1], [0.52, 0.48]),
    ...                            "b": DiscretePrior([0, 1], [0.5, 0.5])})
    >>> Scenario([("a", "b")], [p]).secrets
    ('a', 'b')
    """

    pairs: tuple[tuple[str, str], ...]
    priors: tuple[AdversaryPrior, ...]
    metric: Metric | None = None
    model: Any = field(default=None, compare=False, repr=False)
    secrets: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        pairs = tuple(_check_pair(p) for p in self.pairs)
        if not pairs:
            raise ValueError("pairs must hold at least one discriminative pair, got none")
        priors = tuple(self.priors)
        if not priors:
            raise ValueError("priors must hold at least one AdversaryPrior, got none")
        names = [p.name for p in priors]
        if len(set(names)) != len(names):
            raise ValueError(f"priors must have distinct names, got {names}")
        kinds = sorted({p.kind for p in priors})
        if len(kinds) > 1:
            raise ValueError(f"priors must all be of one kind, got {kinds}")
        secrets = list(dict.fromkeys(s for pair in pairs for s in pair))  # order of first appearance
        for prior in priors:
            missing = [s for s in secrets if s not in prior.conditionals and s not in prior.impossible]
            if missing:
                raise ValueError(
                    f"prior {prior.name!r} must give a distribution for every secret of the "
                    f"pairs (or declare it impossible); it lacks {missing}"
                )
        if not any(self._applicable(prior, pairs) for prior in priors):
            raise ValueError(
                "every pair has a secret of probability 0 under every prior: there is no pair to protect"
            )
        if len({p.sets is None for p in priors}) > 1:
            raise ValueError("priors must all carry prior sets or none")
        metric = self.metric
        if kinds == ["joint"]:
            dims = sorted({p.dimension for a in priors for p in a.conditionals.values()})  # type: ignore[union-attr]
            if len(dims) > 1:
                raise ValueError(f"joint priors must all have one dimension, got {dims}")
            if metric is None:
                metric = Metric.ones(dims[0])
            if not isinstance(metric, Metric) or metric.dimension != dims[0]:
                raise ValueError(f"metric must be a Metric of dimension {dims[0]}, got {self.metric!r}")
        elif metric is not None:
            raise ValueError(f"metric is for joint priors (several columns), got {kinds[0]} priors")
        object.__setattr__(self, "metric", metric)
        object.__setattr__(self, "pairs", pairs)
        object.__setattr__(self, "priors", priors)
        object.__setattr__(self, "secrets", tuple(secrets))

    @classmethod
    def single(
        cls,
        prior_i: AnyPrior,
        prior_j: AnyPrior,
        *,
        names: tuple[str, str] = ("s_i", "s_j"),
        metric: Metric | None = None,
    ) -> Scenario:
        """The scenario of one pair ``(s_i, s_j)`` and one prior named ``"rho"``.

        Parameters
        ----------
        prior_i, prior_j : DiscretePrior, GaussianMixturePrior or JointPrior
            ``P_{X|S}(. | s_i)`` and ``P_{X|S}(. | s_j)``.
        names : (str, str), optional
            Names of the two secrets.
        metric : Metric, optional
            For joint priors: the units of the columns (default 1 each).

        Returns
        -------
        Scenario
        """
        rho = AdversaryPrior("rho", {names[0]: prior_i, names[1]: prior_j})
        return cls(((names[0], names[1]),), (rho,), metric)

    @property
    def kind(self) -> str:
        """``"discrete"`` (:class:`DiscretePrior`), ``"gaussian-mixture"`` or ``"joint"``
        (:class:`~pufferfish.priors.joint.JointPrior`) priors."""
        return self.priors[0].kind

    @property
    def robust(self) -> bool:
        """Whether the priors carry prior sets (:attr:`AdversaryPrior.sets`): checks are then
        worst cases over every prior in them."""
        return self.priors[0].sets is not None

    def without_sets(self) -> Scenario:
        """The same pairs and point-estimate priors, without their prior sets."""
        return Scenario(
            self.pairs,
            tuple(AdversaryPrior(p.name, p.conditionals, impossible=p.impossible) for p in self.priors),
            self.metric,
            self.model,
        )

    def on_grid(self, exponents: int | Sequence[int]) -> Scenario:
        """The scenario of the released centres: every support point rounded to a sampler grid.

        Parameters
        ----------
        exponents : int or sequence of int
            The grid exponent ``k`` of the secure sampler (:func:`pufferfish.noise.samplers.sampler_grid`);
            for joint priors one per column (each column has its own scale ``b w_k``).

        Returns
        -------
        Scenario
            ``self`` when nothing moves (every ``k <= -30``: the supports already lie on the
            release grid). Otherwise each discrete or joint conditional is pushed through
            :func:`pufferfish.priors.distributions.to_grid` (points that meet are merged), and each prior
            set is
            replaced by the set of the same kind and radius around the pushed estimate on the
            rounded alphabet: rounding is monotone, so it contracts both the L1 distance and the
            CDF sup-distance, and the pushed set lies inside the new one (a check over it is a
            check over at least every released prior).

        Raises
        ------
        ValueError
            If the priors are Gaussian mixtures (a continuous prior has no finite rounded form:
            the release bounds the move instead), or the number of exponents is not the dimension.
        """
        ks = (exponents,) if isinstance(exponents, (int, np.integer)) else tuple(exponents)
        if self.kind == "gaussian-mixture":
            raise ValueError("on_grid needs discrete or joint priors, got Gaussian-mixture priors")
        dim = 1 if self.metric is None else self.metric.dimension
        if len(ks) != dim:
            raise ValueError(f"exponents must give one grid per column ({dim}), got {len(ks)}")
        if all(int(k) <= RELEASE_EXPONENT for k in ks):
            return self
        priors = []
        for adversary in self.priors:
            conditionals = {s: _prior_on_grid(p, ks) for s, p in adversary.conditionals.items()}
            sets = None
            if adversary.sets is not None and self.kind == "joint":
                sets = {s: ps.on_grid(tuple(int(k) for k in ks)) for s, ps in adversary.sets.items()}
            elif adversary.sets is not None:
                sets = {s: _set_on_grid(ps, int(ks[0])) for s, ps in adversary.sets.items()}
            priors.append(AdversaryPrior(adversary.name, conditionals, sets, adversary.impossible))
        return Scenario(self.pairs, tuple(priors), self.metric, self.model)

    @staticmethod
    def _applicable(prior: AdversaryPrior, pairs: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        return tuple(p for p in pairs if p[0] not in prior.impossible and p[1] not in prior.impossible)

    def pairs_for(self, prior: AdversaryPrior) -> tuple[tuple[str, str], ...]:
        """The pairs checked under ``prior``: those whose two secrets both have positive
        probability under it (both have a conditional; seed 004 Def 1). Every pair when the
        prior declares no secret impossible."""
        return self._applicable(prior, self.pairs) if prior.impossible else self.pairs

    def possible_secrets(self, prior: AdversaryPrior) -> tuple[str, ...]:
        """The secrets of :attr:`secrets` of positive probability under ``prior`` (those it gives
        a conditional for), in the order of :attr:`secrets`."""
        return tuple(s for s in self.secrets if s not in prior.impossible)

    @property
    def checked_pairs(self) -> int:
        """How many (prior, pair) combinations a check covers (sum over priors of
        :meth:`pairs_for`)."""
        return sum(len(self.pairs_for(p)) for p in self.priors)

    def iter_pairs(self) -> Iterable[tuple[AdversaryPrior, tuple[str, str], DiscretePrior, DiscretePrior]]:
        """Yield ``(prior, (s_i, s_j), P(.|s_i), P(.|s_j))`` for every prior and pair.

        Raises
        ------
        ValueError
            If the priors are not discrete (use :meth:`iter_prior_pairs`).
        """
        if self.kind != "discrete":
            raise ValueError(f"this calculation needs discrete priors, got {self.kind} priors")
        for prior, pair, p_i, p_j in self.iter_prior_pairs():
            assert isinstance(p_i, DiscretePrior) and isinstance(p_j, DiscretePrior)
            yield prior, pair, p_i, p_j

    def iter_prior_pairs(self) -> Iterable[tuple[AdversaryPrior, tuple[str, str], Prior, Prior]]:
        """Yield ``(prior, (s_i, s_j), P(.|s_i), P(.|s_j))`` for every prior and pair, discrete or
        Gaussian mixtures.

        Raises
        ------
        ValueError
            If the priors are joint (use :meth:`iter_joint_pairs`).
        """
        if self.kind == "joint":
            raise ValueError("this calculation needs the priors of one column, got joint priors")
        for prior in self.priors:
            for a, b in self.pairs_for(prior):
                p_i, p_j = prior.conditionals[a], prior.conditionals[b]
                assert not isinstance(p_i, JointPrior) and not isinstance(p_j, JointPrior)
                yield prior, (a, b), p_i, p_j

    def iter_joint_pairs(self) -> Iterable[tuple[AdversaryPrior, tuple[str, str], JointPrior, JointPrior]]:
        """Yield ``(prior, (s_i, s_j), P(.|s_i), P(.|s_j))`` for every prior and pair of joint priors.

        Raises
        ------
        ValueError
            If the priors are not joint.
        """
        if self.kind != "joint":
            raise ValueError(f"this calculation needs joint priors, got {self.kind} priors")
        for prior in self.priors:
            for a, b in self.pairs_for(prior):
                p_i, p_j = prior.conditionals[a], prior.conditionals[b]
                assert isinstance(p_i, JointPrior) and isinstance(p_j, JointPrior)
                yield prior, (a, b), p_i, p_j


def _prior_on_grid(prior: AnyPrior, exponents: Sequence[int]) -> AnyPrior:
    """A discrete or joint prior with each column rounded by
    :func:`~pufferfish.priors.distributions.to_grid`."""
    if isinstance(prior, DiscretePrior):
        return on_grid(prior, int(exponents[0]))
    assert isinstance(prior, JointPrior)
    return prior.on_grid(list(exponents))


def _set_on_grid(prior_set: PriorSet, exponent: int) -> PriorSet:
    """The prior set of the same kind and radius around the rounded estimate (see ``on_grid``)."""
    moved = to_grid(prior_set.alphabet, exponent)
    alphabet, inverse = np.unique(moved, return_inverse=True)
    center = np.asarray(
        np.bincount(inverse.ravel(), weights=prior_set.center, minlength=alphabet.size), dtype=np.float64
    )
    return PriorSet(prior_set.kind, alphabet, center, prior_set.radius, prior_set.confidence)


def _check_pair(pair: Any) -> tuple[str, str]:
    try:
        a, b = pair
    except (TypeError, ValueError):
        raise ValueError(f"each pair must be two secrets (s_i, s_j), got {pair!r}") from None
    if a == b:
        raise ValueError(f"each pair must be two distinct secrets, got {pair!r}")
    return (a, b)
