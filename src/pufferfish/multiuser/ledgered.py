"""A released sum recorded in a ledger (issue 42): its entry, with the query's priors so that the
ledger can check several releases of the same sum together (rule 1 of
:mod:`pufferfish.ledger.guarantee`, :func:`~pufferfish.ledger.guarantee.sum_joint`)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pufferfish.ledger.guarantee import COMPOSES
from pufferfish.multiuser.system import MultiUserSystem, pair_scenario
from pufferfish.priors.distributions import DiscretePrior

#: Largest number of support points of the query's priors an entry records (beyond it the
#: entry holds no priors, and the ledger says so instead of checking the sums together).
MAX_RECORDED_POINTS = 200_000


def system_hash(system: MultiUserSystem) -> str:
    """A SHA-256 of the system's users as written (:meth:`MultiUserSystem.to_dict`)."""
    text = json.dumps(system.to_dict(), sort_keys=True, allow_nan=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def sum_body(
    system: MultiUserSystem, pair_set: str, user: str | None, mechanism: str, epsilon: float,
    views: list[dict[str, Any]], *, insecure: bool,
) -> dict[str, Any]:  # fmt: skip
    """The ledger entry of a released sum: the secret is the users' pair set; ``views`` the
    Laplace noise drawn (``scale``, ``exponent``); the query's priors of every pair checked."""
    scenario = pair_scenario(system, pair_set, None if user is None else [user])
    conditionals = {s: p for s, p in scenario.priors[0].conditionals.items() if isinstance(p, DiscretePrior)}
    points = sum(p.support.size for p in conditionals.values())
    priors = None
    if points <= MAX_RECORDED_POINTS:
        priors = {
            "pairs": [list(p) for p in scenario.pairs],
            "conditionals": {s: [p.support.tolist(), p.pmf.tolist()] for s, p in conditionals.items()},
        }
    return {
        "kind": "sum",
        "secret": f"users' values, pair set {pair_set}" + (f", user {user}" if user else ""),
        "pairs": [list(p) for p in scenario.pairs],
        "columns": ["sum"],
        "mechanism": mechanism,
        "epsilon": float(epsilon),
        "delta": 0.0,
        "criterion": "eps-PP",
        "prior_set": ["none", 0.95, None],
        "views": views,
        "composes": COMPOSES.get(mechanism),
        "insecure": insecure,
        "pair_set": pair_set,
        "user": user,
        "priors": priors,
        "data": {"description": f"a system of {len(system.users)} users", "hash": system_hash(system),
                 "path": None, "rows": len(system.users)},
    }  # fmt: skip
