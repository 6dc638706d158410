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
======================  ===================================================================
"""

from .check import Check, check_information, check_pairs, passes
from .gaussian import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    component_transport,
    corollary1_identical_scale,
    corollary1_scale,
    gaussian_delta,
    summation_scenario,
    tau_star,
)
from .information import approximate_from_mi, mi_from_approximate, mi_from_pure
from .registry import (
    MECHANISMS,
    REGISTRY,
    Mechanism,
    calibrate,
    calibrate_optimal,
    check_mechanisms,
    compare,
    lookup,
    mechanism_table,
    not_applicable,
    run_comparison,
)
from .result import CRITERIA, Calibration, PrivacyCheckError, RootFinding, Skipped
from .search import SAFETY_STEPS, Proposal, Target, smallest_passing, verified

__all__ = [
    "CRITERIA",
    "MECHANISMS",
    "REGISTRY",
    "SAFETY_STEPS",
    "Calibration",
    "Check",
    "Mechanism",
    "PrivacyCheckError",
    "Proposal",
    "RootFinding",
    "Skipped",
    "Target",
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "approximate_from_mi",
    "calibrate",
    "calibrate_optimal",
    "check_information",
    "check_mechanisms",
    "check_pairs",
    "compare",
    "component_transport",
    "corollary1_identical_scale",
    "corollary1_scale",
    "gaussian_delta",
    "lookup",
    "mechanism_table",
    "mi_from_approximate",
    "mi_from_pure",
    "not_applicable",
    "passes",
    "run_comparison",
    "smallest_passing",
    "summation_scenario",
    "tau_star",
    "verified",
]
