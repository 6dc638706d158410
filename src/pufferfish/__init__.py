"""pufferfish: calibrate and release data under pufferfish privacy.

Pufferfish privacy (Kifer and Machanavajjhala 2014) asks that a release ``Y = X + N`` keep every
discriminative pair of secrets ``(s_i, s_j)`` eps-indistinguishable under each adversary prior:
``e^-eps <= P(y | s_i) / P(y | s_j) <= e^eps`` for all ``y``. This package estimates discrete
priors from tables, calibrates Laplace noise with the l1, Kantorovich (W1), relaxed and exactly
optimal calibrators, checks every scale against the exact privacy loss, and releases the data.

Main entry points: :class:`DiscretePrior`, :class:`Scenario`, :func:`kantorovich_plan`,
:func:`privacy_loss`, :func:`calibrate`, :func:`compare`, :func:`estimate_priors`,
:func:`release`; for sums over many users (seed 000): :class:`MultiUserSystem`,
:func:`calibrate_user`, :func:`compare_user`, :func:`calibrate_system`, :func:`release_sum`.
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
from .multiuser import (
    PAIR_SETS,
    MultiUserSystem,
    User,
    leave_one_out,
    others_distribution,
    pair_scenario,
    query_priors,
    sum_distribution,
)
from .multiuser_calibration import (
    MULTIUSER_MECHANISMS,
    MultiUserCalibration,
    Skipped,
    SumRelease,
    SystemCalibration,
    calibrate_system,
    calibrate_user,
    compare_user,
    release_sum,
)
from .noise import NoisyValues, add_laplace
from .priors import AdversaryPrior, DiscretePrior, Scenario, union_support
from .release import OutputExistsError, ReleaseResult, release
from .transport import TransportPlan, kantorovich_plan, max_displacement_from_cdfs

__all__ = [
    "MECHANISMS",
    "MULTIUSER_MECHANISMS",
    "PAIR_SETS",
    "AdversaryPrior",
    "Calibration",
    "DataError",
    "DiscretePrior",
    "EstimatedPriors",
    "MultiUserCalibration",
    "MultiUserSystem",
    "NoisyValues",
    "OutputExistsError",
    "PairLoss",
    "PrivacyCheckError",
    "PrivacyLoss",
    "ReleaseResult",
    "RootFinding",
    "Scenario",
    "Skipped",
    "SumRelease",
    "SystemCalibration",
    "TransportPlan",
    "User",
    "add_laplace",
    "calibrate",
    "calibrate_kantorovich",
    "calibrate_l1",
    "calibrate_optimal",
    "calibrate_relaxed",
    "calibrate_system",
    "calibrate_user",
    "compare",
    "compare_user",
    "dataset_path",
    "estimate_priors",
    "kantorovich_plan",
    "laplace_log_density",
    "leave_one_out",
    "max_displacement_from_cdfs",
    "others_distribution",
    "pair_privacy_loss",
    "pair_scenario",
    "privacy_loss",
    "query_priors",
    "release",
    "release_sum",
    "sum_distribution",
    "union_support",
]
