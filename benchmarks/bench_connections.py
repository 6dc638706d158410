"""What a DuckDB connection costs: opening a database (``duckdb.connect`` with the library's
settings) against a cursor on the process's database (``pufferfish.tables.duckdb_read.connect``).

Run: ``python benchmarks/bench_connections.py [REPEATS]`` (default 200). Each is opened, runs
``SELECT 1`` and is closed; the median of the repeats is printed. A release used one database per
stage (counts, columns written, rows read, rows written) before it took cursors of one database.
"""

from __future__ import annotations

import statistics
import sys
import time

from _timing import machine


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    print(machine())
    import duckdb

    from pufferfish.tables.duckdb_read import DUCKDB_MEMORY_LIMIT, connect
    from pufferfish.tables.outputs import spill_path

    def database() -> None:
        config = {"memory_limit": DUCKDB_MEMORY_LIMIT, "temp_directory": str(spill_path())}
        con = duckdb.connect(config=config)
        con.execute("SELECT 1").fetchall()
        con.close()

    def cursor() -> None:
        with connect() as con:
            con.execute("SELECT 1").fetchall()

    cursor()  # the process's database is opened once, before the timing
    for name, fn in (("a database of its own", database), ("a cursor of the process's database", cursor)):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        print(f"{name}: median {statistics.median(times) * 1000:.2f} ms over {repeats}")


if __name__ == "__main__":
    main()
