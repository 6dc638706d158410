"""pufferfish: calibrate and release data under pufferfish privacy.

Pufferfish privacy (Kifer and Machanavajjhala 2014) asks that a release ``Y = X + N`` keep every
discriminative pair of secrets ``(s_i, s_j)`` eps-indistinguishable under each adversary prior:
``e^-eps <= P(y | s_i) / P(y | s_j) <= e^eps`` for all ``y``. This package estimates discrete
priors from tables, calibrates Laplace noise with the l1, Kantorovich (W1), relaxed and exactly
optimal calibrators, checks every scale against the exact privacy loss, and releases the data.

Main entry points: :class:`DiscretePrior`, :class:`Scenario`, :func:`kantorovich_plan`,
:func:`privacy_loss`, :func:`calibrate`, :func:`compare`, :func:`estimate_priors`,
:func:`calibrate_table`, :func:`release`; for sums over many users (seed 000): :class:`MultiUserSystem`,
:func:`calibrate_user`, :func:`compare_user`, :func:`calibrate_system`, :func:`release_sum`; for
releasing more than once (issue 42): :class:`Session` and ``--ledger``.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names for type checkers; at run time they load on first use
    from pufferfish.calibration import (
        MECHANISMS,
        REGISTRY,
        Calibration,
        Mechanism,
        PrivacyCheckError,
        RootFinding,
        Skipped,
        calibrate,
        calibrate_optimal,
        compare,
    )
    from pufferfish.loss.exact import (
        PairLoss,
        PrivacyLoss,
        laplace_log_density,
        pair_privacy_loss,
        privacy_loss,
    )
    from pufferfish.loss.robust import SetLoss, worst_case_loss
    from pufferfish.multiuser import (
        MULTIUSER_MECHANISMS,
        PAIR_SETS,
        MultiUserCalibration,
        MultiUserSystem,
        SumRelease,
        SystemCalibration,
        User,
        calibrate_system,
        calibrate_user,
        compare_user,
        leave_one_out,
        others_distribution,
        pair_scenario,
        query_priors,
        release_sum,
        sum_distribution,
    )
    from pufferfish.noise.samplers import NoisyValues, add_laplace
    from pufferfish.priors.distributions import DiscretePrior, union_support
    from pufferfish.priors.scenario import AdversaryPrior, Scenario
    from pufferfish.priors.sets import PriorSet, dkw_radius, l1_radius
    from pufferfish.session import Session
    from pufferfish.transport.line import (
        TransportPlan,
        kantorovich_plan,
        marginal_error_bound,
        max_displacement_from_cdfs,
    )

__all__ = [
    "MECHANISMS",
    "MULTIUSER_MECHANISMS",
    "PAIR_SETS",
    "REGISTRY",
    "AdversaryPrior",
    "Calibration",
    "DataError",
    "DiscretePrior",
    "EstimatedJointPriors",
    "EstimatedPriors",
    "Mechanism",
    "MultiUserCalibration",
    "MultiUserSystem",
    "NoisyValues",
    "OutputExistsError",
    "PairLoss",
    "PriorSet",
    "PrivacyCheckError",
    "PrivacyLoss",
    "ReleaseResult",
    "RootFinding",
    "Scenario",
    "Session",
    "SetLoss",
    "Skipped",
    "SumRelease",
    "SystemCalibration",
    "TableCalibration",
    "TransportPlan",
    "User",
    "add_laplace",
    "calibrate",
    "calibrate_optimal",
    "calibrate_system",
    "calibrate_table",
    "calibrate_user",
    "compare",
    "compare_user",
    "dataset_path",
    "dkw_radius",
    "estimate_priors",
    "kantorovich_plan",
    "l1_radius",
    "laplace_log_density",
    "leave_one_out",
    "marginal_error_bound",
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
    "with_prior_sets",
    "worst_case_loss",
]


# Every public name is imported on first use (PEP 562): `import pufferfish` (and the command
# line's start-up) loads nothing heavy, so Ctrl-C while starting is caught by the entry point
# (pufferfish.cli.entry) and the table layer (DuckDB, PyArrow; Spark on demand) loads only when used.
_LAZY = {
    "MECHANISMS": "calibration",
    "REGISTRY": "calibration",
    "Calibration": "calibration",
    "Mechanism": "calibration",
    "PrivacyCheckError": "calibration",
    "RootFinding": "calibration",
    "Skipped": "calibration",
    "calibrate": "calibration",
    "calibrate_optimal": "calibration",
    "compare": "calibration",
    "PairLoss": "loss.exact",
    "PrivacyLoss": "loss.exact",
    "laplace_log_density": "loss.exact",
    "pair_privacy_loss": "loss.exact",
    "privacy_loss": "loss.exact",
    "MULTIUSER_MECHANISMS": "multiuser",
    "PAIR_SETS": "multiuser",
    "MultiUserCalibration": "multiuser",
    "MultiUserSystem": "multiuser",
    "SumRelease": "multiuser",
    "SystemCalibration": "multiuser",
    "User": "multiuser",
    "calibrate_system": "multiuser",
    "calibrate_user": "multiuser",
    "compare_user": "multiuser",
    "leave_one_out": "multiuser",
    "others_distribution": "multiuser",
    "pair_scenario": "multiuser",
    "query_priors": "multiuser",
    "release_sum": "multiuser",
    "sum_distribution": "multiuser",
    "NoisyValues": "noise.samplers",
    "add_laplace": "noise.samplers",
    "DiscretePrior": "priors.distributions",
    "union_support": "priors.distributions",
    "PriorSet": "priors.sets",
    "dkw_radius": "priors.sets",
    "l1_radius": "priors.sets",
    "SetLoss": "loss.robust",
    "worst_case_loss": "loss.robust",
    "AdversaryPrior": "priors.scenario",
    "Scenario": "priors.scenario",
    "TransportPlan": "transport.line",
    "kantorovich_plan": "transport.line",
    "marginal_error_bound": "transport.line",
    "max_displacement_from_cdfs": "transport.line",
    "DataError": "tables",
    "EstimatedJointPriors": "tables",
    "EstimatedPriors": "tables",
    "dataset_path": "tables",
    "estimate_priors": "tables",
    "with_prior_sets": "tables",
    "OutputExistsError": "tables",
    "ReleaseResult": "pipeline.results",
    "TableCalibration": "pipeline.results",
    "calibrate_table": "pipeline.calibrate",
    "release": "pipeline.release",
    "Session": "session",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # loaded once
        return value
    raise AttributeError(f"module 'pufferfish' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
