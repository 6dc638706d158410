"""Benchmark: optimal calibration over every user of a large multi-user system (seed 000).

Usage: python benchmarks/bench_multiuser.py [USERS] [--pair-set P-bot|P-Q] [--check-query]

Builds USERS users (default 100,000) with values in {0, ..., 4} and random distributions
(Dirichlet(2,...,2), seed 0; for P-Q every user also gets a random alternative), then runs
``calibrate_system`` (the optimal scale over every user's pair) at eps = 0.5 and 1.0 and prints
the wall time and the peak resident memory. With ``--check-query`` it also computes the other
users' sum for the deciding user (tilted FFT windows over USERS - 1 users) and checks the exact
privacy loss of the full query at the system scale (``calibrate_system(check_query=True)``).
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np
from _timing import machine

from pufferfish.multiuser import MultiUserSystem, User, calibrate_system
from pufferfish.priors.distributions import DiscretePrior


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def build(users: int, with_alternative: bool) -> MultiUserSystem:
    rng = np.random.default_rng(0)
    support = np.arange(5.0)
    pmfs = rng.dirichlet(np.full(5, 2.0), size=users)
    alts = rng.dirichlet(np.full(5, 2.0), size=users) if with_alternative else None
    out = []
    for i in range(users):
        alt = DiscretePrior(support, alts[i]) if alts is not None else None
        out.append(User(f"u{i}", DiscretePrior(support, pmfs[i]), alternative=alt))
    return MultiUserSystem(tuple(out))


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    users = int(args[0]) if args else 100_000
    pair_set = "P-Q" if "--pair-set=P-Q" in sys.argv or "P-Q" in sys.argv else "P-bot"
    print(machine())
    t0 = time.perf_counter()
    system = build(users, pair_set == "P-Q")
    built = time.perf_counter() - t0
    print(f"built {users:,} users on {{0..4}} in {built:.1f} s; peak RSS {peak_mib():.0f} MiB")
    for eps in (0.5, 1.0):
        res = calibrate_system(system, pair_set, eps, check_query=False)
        print(
            f"{pair_set} eps={eps}: optimal scale {res.scale:.6g} (user {res.user}), "
            f"lower bound {res.lower_bound:.6g}; {res.certified_alone:,} users certified alone, "
            f"{res.checked_query} on the full query; {res.seconds:.1f} s; peak RSS {peak_mib():.0f} MiB"
        )
    if "--check-query" in sys.argv:
        res = calibrate_system(system, pair_set, 1.0, check_query=True)
        q = res.query_check
        assert q is not None
        print(
            f"{pair_set} eps=1.0 with the deciding user's full query checked: scale {res.scale:.10g} "
            f"(user {res.user}); exact loss {q.loss:.10f} + bound {q.error_bound:.2g} <= 1.0; "
            f"{res.seconds:.1f} s; peak RSS {peak_mib():.0f} MiB"
        )


if __name__ == "__main__":
    main()
