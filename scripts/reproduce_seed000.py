"""Reproduce seed 000's scale-versus-epsilon settings: Fig 4, Fig 5(a), Fig 8, Fig 9(a).

Usage: python scripts/reproduce_seed000.py [OUTPUT_DIR]   (default: reproductions/seed000)

Writes NAME.csv, NAME.md and NAME.svg per figure and prints the Markdown tables at a few epsilons.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pufferfish.reproduce import seed000_fig4, seed000_fig5a, seed000_fig8, seed000_fig9a, write_curves


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "reproductions/seed000")
    for fn in (seed000_fig4, seed000_fig5a, seed000_fig8, seed000_fig9a):
        t0 = time.perf_counter()
        res = fn()
        paths = write_curves(res, out)
        print(f"## {res.title}  ({time.perf_counter() - t0:.1f} s)")
        print(res.setting)
        print("| epsilon | " + " | ".join(res.mechanisms) + " |")
        for e, eps in enumerate(res.epsilons):
            if eps in (0.1, 0.5, 1.0, 2.0):
                print(f"| {eps:g} | " + " | ".join(f"{v:.4g}" for v in res.scales[e]) + " |")
        print("wrote", ", ".join(str(p) for p in paths))
        print()


if __name__ == "__main__":
    main()
