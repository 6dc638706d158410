"""pufferfish: calibrate and release data under pufferfish privacy.

Pufferfish privacy (Kifer and Machanavajjhala 2014) asks that a release ``Y = X + N`` keep every
discriminative pair of secrets ``(s_i, s_j)`` eps-indistinguishable under each adversary prior:
``e^-eps <= P(y | s_i) / P(y | s_j) <= e^eps`` for all ``y``. This package estimates discrete
priors from tables, calibrates Laplace noise with the l1, Kantorovich (W1), relaxed and exactly
optimal calibrators, checks every scale against the exact privacy loss, and releases the data.

Main entry points: :class:`DiscretePrior`, :class:`Scenario`, :func:`kantorovich_plan`,
:func:`privacy_loss`, :func:`calibrate`, :func:`compare`, :func:`estimate_priors`,
:func:`release`.
"""

from .calibration import (
    MECHANISMS,
    Calibration,
    PrivacyCheckError,
    RootFinding,
    calibrate,
    calibrate_kantorovich,
    calibrate_l1,
    calibrate_optimal,
    calibrate_relaxed,
    compare,
)
from .data import DataError, EstimatedPriors, dataset_path, estimate_priors
from .loss import PairLoss, PrivacyLoss, laplace_log_density, pair_privacy_loss, privacy_loss
from .noise import NoisyValues, add_laplace
from .priors import AdversaryPrior, DiscretePrior, Scenario, union_support
from .release import OutputExistsError, ReleaseResult, release
from .transport import TransportPlan, kantorovich_plan, max_displacement_from_cdfs

__all__ = [
    "MECHANISMS",
    "AdversaryPrior",
    "Calibration",
    "DataError",
    "DiscretePrior",
    "EstimatedPriors",
    "NoisyValues",
    "OutputExistsError",
    "PairLoss",
    "PrivacyCheckError",
    "PrivacyLoss",
    "ReleaseResult",
    "RootFinding",
    "Scenario",
    "TransportPlan",
    "add_laplace",
    "calibrate",
    "calibrate_kantorovich",
    "calibrate_l1",
    "calibrate_optimal",
    "calibrate_relaxed",
    "compare",
    "dataset_path",
    "estimate_priors",
    "kantorovich_plan",
    "laplace_log_density",
    "max_displacement_from_cdfs",
    "pair_privacy_loss",
    "privacy_loss",
    "release",
    "union_support",
]
