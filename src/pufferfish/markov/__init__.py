"""Pufferfish privacy for Markov chains (issue 30): a person's time series whose states are the
secrets, released through a count of visits to a state.

* :mod:`.chain`: :class:`MarkovChain` (transition matrix, initial distribution, state names).
* :mod:`.counts`: :class:`CountModel` and the exact priors ``P(count | X_i = a)`` by
  forward-backward convolution; :func:`count_scenario` turns them into a
  :class:`~pufferfish.priors.scenario.Scenario` that every mechanism of the registry calibrates and the
  exact check verifies.
* :mod:`.quilts`: the Markov quilt mechanism (Song, Wang and Chaudhuri 2017) with the exact and
  the approximate max-influence, group differential privacy and GK16, the baselines.
* :mod:`.mechanisms`: what the registry's Markov mechanisms compute, registered explicitly here
  (the registry imports nothing of this package).
"""

from pufferfish.markov import mechanisms
from pufferfish.markov.chain import MarkovChain, parse_matrix, stationary_distribution
from pufferfish.markov.counts import QUERIES, CountModel, count_priors, count_scenario, secret_name

mechanisms.register()  # the registry's Markov mechanisms compute here (pufferfish.markov.mechanisms)

__all__ = [
    "QUERIES",
    "CountModel",
    "MarkovChain",
    "count_priors",
    "count_scenario",
    "parse_matrix",
    "secret_name",
    "stationary_distribution",
]
