"""Calibration: one registry of mechanisms, one exact check, one safe-side search.

======================  ===================================================================
module                  what it holds
======================  ===================================================================
:mod:`.result`          :class:`Calibration`, :class:`Skipped`, :class:`RootFinding`,
                        :class:`PrivacyCheckError`
:mod:`.check`           the exact check at one scale and the rule ``value + bound <= target``
:mod:`.search`          the safe-side ladder and the smallest passing scale (``optimal``)
:mod:`.registry`        :class:`Mechanism` entries, :func:`calibrate`, :func:`compare`
:mod:`.discrete`        l1, Kantorovich, relaxed (seeds 001, 002)
:mod:`.gaussian`        Monge, GMM, Kantorovich- and analytic-Gaussian, Cor 1 (seeds 002, 003)
:mod:`.information`     eps-MI mechanisms and the seed 004 conversions
:mod:`.mapping`         randomized mappings of a finite alphabet: the LP, randomized response,
                        geometric; their exact check and utility
======================  ===================================================================
"""

from pufferfish.calibration.check import Check, check_information, check_pairs, passes
from pufferfish.calibration.gaussian import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    component_transport,
    corollary1_identical_scale,
    corollary1_scale,
    gaussian_delta,
    summation_scenario,
    tau_star,
)
from pufferfish.calibration.information import approximate_from_mi, mi_from_approximate, mi_from_pure
from pufferfish.calibration.mapping import UTILITIES, Utility, mapping_loss, optimal_matrix
from pufferfish.calibration.registry import (
    MAPPING_MECHANISMS,
    MECHANISMS,
    REGISTRY,
    TIME_LIMIT,
    Mechanism,
    calibrate,
    calibrate_mapping,
    calibrate_optimal,
    check_mechanisms,
    check_time_limit,
    compare,
    lookup,
    mechanism_table,
    not_applicable,
    run_comparison,
)
from pufferfish.calibration.result import (
    CRITERIA,
    Calibration,
    MappingCalibration,
    PrivacyCheckError,
    RootFinding,
    Skipped,
    TimeLimitError,
)
from pufferfish.calibration.search import SAFETY_STEPS, Proposal, Target, smallest_passing, verified
from pufferfish.loss.divergence import MemoryLimitError

__all__ = [
    "CRITERIA",
    "MAPPING_MECHANISMS",
    "MECHANISMS",
    "REGISTRY",
    "SAFETY_STEPS",
    "TIME_LIMIT",
    "UTILITIES",
    "Calibration",
    "Check",
    "MappingCalibration",
    "Mechanism",
    "MemoryLimitError",
    "PrivacyCheckError",
    "Proposal",
    "RootFinding",
    "Skipped",
    "Target",
    "TimeLimitError",
    "Utility",
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "approximate_from_mi",
    "calibrate",
    "calibrate_mapping",
    "calibrate_optimal",
    "check_information",
    "check_mechanisms",
    "check_pairs",
    "check_time_limit",
    "compare",
    "component_transport",
    "corollary1_identical_scale",
    "corollary1_scale",
    "gaussian_delta",
    "lookup",
    "mapping_loss",
    "mechanism_table",
    "mi_from_approximate",
    "mi_from_pure",
    "not_applicable",
    "optimal_matrix",
    "passes",
    "run_comparison",
    "smallest_passing",
    "summation_scenario",
    "tau_star",
    "verified",
]
