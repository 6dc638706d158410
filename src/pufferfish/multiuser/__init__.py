"""Summation queries over many users (seed 000): the system, its sums, and their calibration.

==========================  ==============================================================
module                      what it holds
==========================  ==============================================================
:mod:`.system`              :class:`User`, :class:`MultiUserSystem`, pair sets, query priors
:mod:`.convolution`         :func:`sum_distribution`: exact sums in log space
:mod:`.theorems`            the closed-form scales of seed 000 Thm 1-4, Lemma 1-2, eq (15)
:mod:`.calibrate_system`    one user (:func:`calibrate_user`, :func:`compare_user`), every user
                            (:func:`calibrate_system`), the release (:func:`release_sum`)
==========================  ==============================================================
"""

from pufferfish.multiuser.calibrate_system import (
    MultiUserCalibration,
    SumRelease,
    SystemCalibration,
    calibrate_system,
    calibrate_user,
    compare_user,
    release_sum,
)
from pufferfish.multiuser.convolution import MAX_ATOMS, sum_distribution
from pufferfish.multiuser.system import (
    PAIR_SETS,
    SYSTEM_PRIOR,
    MultiUserSystem,
    User,
    check_pair_set,
    leave_one_out,
    others_distribution,
    own_pair,
    pair_scenario,
    query_priors,
    secret_names,
)
from pufferfish.multiuser.theorems import (
    GENERAL,
    MULTIUSER_MECHANISMS,
    SOURCES,
    THEOREMS,
    USER_MECHANISMS,
    TheoremScale,
    UserMechanism,
    eq15_scale,
    lemma1_scale,
    lemma2_scale,
    not_applicable,
    thm1_scale,
    thm2_scale,
    thm3_eq13_scale,
    thm3_eq14_scale,
    thm4_scale,
    user_mechanism_table,
)

__all__ = [
    "GENERAL",
    "MAX_ATOMS",
    "MULTIUSER_MECHANISMS",
    "PAIR_SETS",
    "SOURCES",
    "SYSTEM_PRIOR",
    "THEOREMS",
    "USER_MECHANISMS",
    "MultiUserCalibration",
    "MultiUserSystem",
    "SumRelease",
    "SystemCalibration",
    "TheoremScale",
    "User",
    "UserMechanism",
    "calibrate_system",
    "calibrate_user",
    "check_pair_set",
    "compare_user",
    "eq15_scale",
    "leave_one_out",
    "lemma1_scale",
    "lemma2_scale",
    "not_applicable",
    "others_distribution",
    "own_pair",
    "pair_scenario",
    "query_priors",
    "release_sum",
    "secret_names",
    "sum_distribution",
    "thm1_scale",
    "thm2_scale",
    "thm3_eq13_scale",
    "thm3_eq14_scale",
    "thm4_scale",
    "user_mechanism_table",
]
