"""Several public columns released jointly: joint priors, a weighted L1 metric, transport plans in
d dimensions and the exact check of product Laplace noise (issue 17, seed 002 Thm 1-3, seed 004).
The registry's mechanisms on joint priors are in :mod:`pufferfish.calibration.joint`; tables in
:mod:`pufferfish.joint_table`.

Releasing columns one at a time, each private for the secret, says nothing about the tuple when
the columns are correlated (pufferfish privacy does not compose in general; Kifer and
Machanavajjhala 2014): the tuple is released jointly, with one check.

=====================  ======================================================================
module                 what it holds
=====================  ======================================================================
:mod:`.joint`          :class:`JointPrior` (the tuple's distribution given a secret),
                       :class:`Metric` (``d(x, x') = sum_k |x_k - x'_k| / w_k``)
:mod:`.plans`          :class:`VectorPlan`; the W1 plan for ``d`` (POT's exact ``emd``) and
                       the bottleneck (W-infinity) plan by bisection and maximum flow
:mod:`.loss`           exact privacy loss of product Laplace noise, maximised over the
                       vertices of the product grid (a proof in its docstring)
=====================  ======================================================================
"""

from pufferfish.vector.joint import JointPrior, Metric
from pufferfish.vector.loss import VectorLoss, product_laplace_loss
from pufferfish.vector.plans import VectorPlan, bottleneck_plan, kantorovich_plan

__all__ = [
    "JointPrior",
    "Metric",
    "VectorLoss",
    "VectorPlan",
    "bottleneck_plan",
    "kantorovich_plan",
    "product_laplace_loss",
]
