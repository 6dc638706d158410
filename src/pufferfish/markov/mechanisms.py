"""The Markov mechanisms of the registry: what ``group-dp``, ``gk16``, ``mqm-approx``, ``mqm-exact``
and ``optimal-set`` compute on a count scenario (:func:`~.counts.count_scenario`).

The registry (:mod:`pufferfish.calibration.registry`) keeps their names, sources and order, and
checks every proposed scale exactly on the one path; it imports nothing of this package. This module
gives it the implementations for models of kind ``"markov count"`` (:class:`~.counts.CountModel`),
registered by :func:`register`, which ``pufferfish.markov`` calls when it is imported (every count
scenario's model comes from this package, so a scenario of that kind implies the registration).
"""

from __future__ import annotations

from pufferfish.calibration.registry import register_model_mechanisms
from pufferfish.calibration.search import Proposal
from pufferfish.markov.counts import CountModel
from pufferfish.markov.quilts import model_sigma
from pufferfish.markov.setopt import model_set_optimum
from pufferfish.priors.scenario import Scenario


class MarkovCountMechanisms:
    """The Markov baselines (:mod:`.quilts`: Song, Wang and Chaudhuri 2017's MQMExact and
    MQMApprox, group differential privacy, GK16) and the optimum certified over a set of row balls
    (:mod:`.setopt`), for :class:`~pufferfish.calibration.registry.ModelMechanisms`."""

    def scale(self, which: str, scenario: Scenario, epsilon: float) -> Proposal:
        """The proposed scale of ``which`` on a count scenario (checked by the registry's path).

        Parameters
        ----------
        which : {"group-dp", "gk16", "mqm-approx", "mqm-exact", "optimal-set"}
        scenario : Scenario
            A count scenario (:func:`~.counts.count_scenario`).
        epsilon : float
            > 0.

        Returns
        -------
        Proposal
            The scale in the query's unit, the prior and pair it is decided by, and why.

        Raises
        ------
        ValueError
            Where the mechanism's own condition fails (GK16's Gamma matrix): the row's reason.
        """
        model = scenario.model
        assert isinstance(model, CountModel)
        if which == "optimal-set":
            found = model_set_optimum(model, epsilon)
            rho = scenario.priors[0]
            pairs = scenario.pairs_for(rho) or scenario.pairs
            return Proposal(found.scale * model.sensitivity, rho.name, pairs[0], found.sentence())
        sigma, where, chain, node = model_sigma(model, epsilon, which)
        at = f"X[{node}]="
        rho = scenario.priors[chain]
        pairs = scenario.pairs_for(rho) or scenario.pairs
        pair = next((p for p in pairs if p[0].startswith(at)), pairs[0])
        return Proposal(sigma, rho.name, pair, where)

    def applies(self, which: str, scenario: Scenario, noise: str) -> str | None:
        """Why ``which`` does not apply: GK16 on more than two states or a histogram, MQMApprox on a
        chain that does not start stationary or has a transient state, ``optimal-set`` without a
        set of row balls, beyond binary chains, on a histogram or with Gaussian noise (the noise of
        the others is checked by the registry; GK16's own condition on its Gamma matrix by its
        scale function, whose ValueError becomes the row's reason). None if it applies.
        """
        model = scenario.model
        assert isinstance(model, CountModel)
        if which == "wasserstein-coupling":
            return "defined for a dataset property (pufferfish property), not a Markov chain"
        if which == "optimal-set":
            if model.row_balls is None:
                return (
                    "needs a count on a Markov chain's confidence set of row balls (pufferfish markov, "
                    "from data)"
                )
            if model.chains[0].k != 2:
                return (
                    "certified over the set for binary chains only (a branch and bound over the "
                    "rectangle of chains)"
                )
            if model.query == "histogram":
                return "certified for a count or a frequency, not a histogram"
            return "Laplace noise only" if noise != "laplace" else None
        if which == "gk16" and model.chains[0].k != 2:
            return "GK16 is defined for binary chains only"
        if which == "gk16" and model.query == "histogram":
            return "GK16 is stated for a count (a sum), not a histogram"
        if which == "mqm-approx" and not all(c.stationary for c in model.chains):
            return "MQMApprox bounds the influence of a stationary chain (initial='stationary')"
        if which == "mqm-approx" and not all(c.initial_distribution.min() > 0.0 for c in model.chains):
            return "MQMApprox needs every stationary probability > 0 (a chain has a transient state)"
        return None


def register() -> None:
    """Give the registry the Markov mechanisms' implementations (models of kind ``"markov count"``)."""
    register_model_mechanisms(CountModel.kind, MarkovCountMechanisms())
