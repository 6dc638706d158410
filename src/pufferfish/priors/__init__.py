"""Priors: what an adversary believes about the released value given each secret.

* :mod:`pufferfish.priors.distributions`: :class:`~pufferfish.priors.distributions.DiscretePrior`
  and Gaussian-mixture priors of one column, the release grid;
* :mod:`pufferfish.priors.joint`: :class:`~pufferfish.priors.joint.JointPrior` of several columns
  and the weighted metric (absolute difference or Hamming per column);
* :mod:`pufferfish.priors.sets`: prior sets of one column (DKW band, L1 ball) and their radii;
* :mod:`pufferfish.priors.balls`: prior sets of several columns (L1 balls on the joint alphabet);
* :mod:`pufferfish.priors.scenario`: :class:`~pufferfish.priors.scenario.Scenario`, the
  discriminative pairs and the adversaries' priors.
"""
