"""A secure release against a seeded one of the same table and against DuckDB copying it, measured
in one run.

Run: ``python benchmarks/bench_secure_release.py [ROWS] [--rounds R]`` (default 10^7 rows, 5
rounds). Writes the table of ``bench_release.py`` (an id, a secret ``s``, a public integer ``x``
with 1 row in 11 missing, a float ``y``) to Parquet once, then, R times, interleaved, in this
process:

* ``secure``: releases ``x`` at eps 1 to Parquet with the exact secure sampler (OS randomness,
  every core);
* ``seeded``: the same with NumPy's seeded generator (insecure);
* ``secure, input order``: ``secure`` with ``keep_order=True`` (the rows in the input order: what
  the shuffle costs);
* ``duckdb+random``: DuckDB's ``COPY (SELECT x + random() AS x FROM read_parquet(...)) TO ...
  (FORMAT parquet)``: the release's output (it writes the released column alone: every other
  column, the secret's included, is left out) with no guarantee;
* ``duckdb copy``: DuckDB copying the column ``x`` unchanged;
* ``duckdb+random, shuffled``: ``duckdb+random`` with ``ORDER BY random()``: the same output as
  the release's, whose rows are written in a uniformly random order (the release sorts on two
  64-bit keys from OpenSSL, ``pufferfish.tables.perturb.order_keys``).

Prints each mode's min / median / max wall time and, for each anchor, the ratio of the secure
release to it in each round, min / median / max. Goals: secure / seeded <= 1.3x,
secure / duckdb+random <= 2x and secure / duckdb copy <= 3x.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _timing import machine, write_table

from pufferfish import release


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", type=float, default=1e7, help="rows of the table")
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    rows, rounds = int(opts.size), opts.rounds
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        src = Path(folder) / "in.parquet"
        write_table(src, rows)
        modes = (
            "secure",
            "seeded",
            "secure, input order",
            "duckdb+random",
            "duckdb copy",
            "duckdb+random, shuffled",
        )
        times: dict[str, list[float]] = {m: [] for m in modes}
        sampler = ""
        for r in range(rounds):
            for mode in modes:
                out = Path(folder) / f"out_{r}_{modes.index(mode)}.parquet"
                t0 = time.perf_counter()
                if mode.startswith("duckdb"):
                    _duckdb_copy(src, out, noise="random" in mode, shuffle="shuffled" in mode)
                else:
                    res = release(
                        src, secret="s", public="x", pairs=[("a", "b")], epsilon=1.0,
                        output=out, rng=None if mode.startswith("secure") else r, keep_order="input" in mode,
                    )  # fmt: skip
                    sampler = res.noise["sampler"] if mode == "secure" else sampler
                times[mode].append(time.perf_counter() - t0)
                out.unlink()
        print(f"rows: {rows:,}; {rounds} interleaved rounds; released x at eps 1 to Parquet")
        print(f"secure sampler: {sampler}")
        for mode, ts in times.items():
            mid = statistics.median(ts)
            print(f"{mode:>7}: {min(ts):.2f} / {mid:.2f} / {max(ts):.2f} s (min / median / max)")
        anchors = [("seeded", 1.3), ("duckdb+random", 2.0), ("duckdb copy", 3.0)]
        anchors.append(("duckdb+random, shuffled", 2.0))
        ratios = sorted(
            s / n for s, n in zip(times["secure, input order"], times["duckdb+random"], strict=True)
        )
        print(
            f"  ratio secure, input order / duckdb+random per round: {ratios[0]:.2f} / "
            f"{statistics.median(ratios):.2f} / {ratios[-1]:.2f}x (min / median / max)"
        )
        for anchor, goal in anchors:
            ratios = sorted(s / n for s, n in zip(times["secure"], times[anchor], strict=True))
            print(
                f"  ratio secure / {anchor} per round: {ratios[0]:.2f} / {statistics.median(ratios):.2f} / "
                f"{ratios[-1]:.2f}x (min / median / max; goal <= {goal:g}x)"
            )


def _duckdb_copy(src: Path, out: Path, *, noise: bool, shuffle: bool) -> None:
    """DuckDB's own copy of the column ``x`` to Parquet, plus ``random()`` or unchanged, the rows
    shuffled or in order (the library's memory limit, :data:`pufferfish.tables.DUCKDB_MEMORY_LIMIT`)."""
    import duckdb

    from pufferfish.tables import DUCKDB_MEMORY_LIMIT

    con = duckdb.connect(config={"memory_limit": DUCKDB_MEMORY_LIMIT})
    x = "x + random() AS x" if noise else "x"
    order = " ORDER BY random()" if shuffle else ""
    con.execute(f"COPY (SELECT {x} FROM read_parquet('{src}'){order}) TO '{out}' (FORMAT parquet)")
    con.close()


if __name__ == "__main__":
    main()
