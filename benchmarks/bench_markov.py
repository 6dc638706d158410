"""Time and peak memory of `pufferfish markov calibrate --mechanism optimal` (issue 30).

Run: ``python benchmarks/bench_markov.py [--repeats N] [--long]``. Each case runs the command line
in a fresh process (through :data:`pufferfish.cli.app.app`) and prints the median wall time over
``--repeats`` runs (default 1) and the largest peak resident memory of those processes
(``ru_maxrss`` of the child). Cases:

* binary chain, flip 0.1, stationary, eps 1: T = 1,000 and 3,000 (target: seconds);
* 8 states, a symmetric ring (stay 0.7, each neighbour 0.15; time-reversible, so half the
  times are checked), T = 1,000;
* 8 states, a ring that drifts forward (stay 0.6, forward 0.3, back 0.1: every time is
  checked), T = 1,000;
* ``--long``: binary, T = 10,000 (issue 45: <= 30 s and <= 1 GiB).

The scale printed is the command's own (``--json``), with the exact loss it checked.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from _timing import cli_runs, machine


def matrix_text(m: np.ndarray) -> str:
    return ";".join(",".join(repr(float(x)) for x in row) for row in m)


def ring(k: int, stay: float) -> np.ndarray:
    m = np.zeros((k, k))
    for a in range(k):
        m[a, a] = stay
        m[a, (a + 1) % k] += (1 - stay) / 2
        m[a, (a - 1) % k] += (1 - stay) / 2
    return m


def drifting(k: int) -> np.ndarray:
    """A ring that moves forward more often than back (not reversible)."""
    m = np.zeros((k, k))
    for a in range(k):
        m[a, a] = 0.6
        m[a, (a + 1) % k] += 0.3
        m[a, (a - 1) % k] += 0.1
    return m


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--long", action="store_true", help="also T = 10,000 (about 30 s)")
    opts = parser.parse_args()
    binary = "0.9,0.1;0.1,0.9"
    cases = [
        ("binary flip 0.1", binary, 1000),
        ("binary flip 0.1", binary, 3000),
        ("8-state ring (reversible)", matrix_text(ring(8, 0.7)), 1000),
        ("8-state drifting ring", matrix_text(drifting(8)), 1000),
    ]
    if opts.long:
        cases.append(("binary flip 0.1", binary, 10000))
    print(machine())
    print(f"{'chain':<28} {'T':>6} {'median s':>9} {'peak MiB':>9} {'scale':>10} {'checked loss':>13}  times")
    for name, matrix, length in cases:
        args = [
            "markov", "calibrate", "--transition", matrix, "--length", str(length),
            "--epsilon", "1", "--mechanism", "optimal", "--json",
        ]  # fmt: skip
        seconds, peak, text = cli_runs(args, opts.repeats)
        out = json.loads(text)
        row = out["results"][0]
        times = out["model"]["checked_times"].split(" ")[0]
        print(
            f"{name:<28} {length:>6} {seconds:>9.1f} {peak:>9.0f} {row['scale']:>10.4f} "
            f"{row['checked_loss']:>13.10f}  {times}"
        )


if __name__ == "__main__":
    main()
