"""Chen and Ohrimenko's mechanisms on their Adult release against the certified ones (issue 58).

Run: ``python benchmarks/bench_dataset_compare.py [--draws N]`` (default 20000). Prints the table
of :func:`pufferfish.reproduce.chen2023.chen2023_adult` (``pufferfish reproduce chen2023`` writes
the same as Markdown and CSV; its module docstring says what each column is).
"""

from __future__ import annotations

import argparse
import time

from _timing import machine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20000)
    opts = parser.parse_args()
    print(machine())
    from pufferfish.reproduce.chen2023 import FIVE, chen2023_adult

    t0 = time.perf_counter()
    found = chen2023_adult(opts.draws)
    print(f"Adult, income=>50K, n = 100, statistics: {FIVE}; delta = 0.001; {opts.draws} noise draws")
    for shares, (gap, joint) in found.count_loss.items():
        print(
            f"\nshares {shares[0]:g} vs {shares[1]:g}: noise along mu1 - mu2 only (DirM, DauM) leaves a "
            f"combination of the two counts without noise: distinct pairs at least {gap:.3g} apart, so the "
            f"release tells both counts, whose joint law alone has loss {joint:.4g} nats"
        )
        print(
            f"{'eps':>4}  {'mechanism':<22} {'L2 error':>9}  {'true loss >=':>15}  {'true loss <=':>12}  "
            f"{'ours at that eps':>16}"
        )
        for r in found.rows:
            if r.shares == shares:
                ours = "-" if r.ours is None else f"{r.ours:.3f}"
                upper = "-" if r.upper is None else f"{r.upper:.4g}"
                head = f"{r.epsilon:>4g}  {r.mechanism:<22} {r.l2_error:>9.3f}"
                print(f"{head}  {r.bound:>15}  {upper:>12}  {ours:>16}")
    print(f"\n{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
