"""Send SIGINT or SIGTERM to ``pufferfish release`` at chosen moments and print what it left.

Run: ``python scripts/interrupt_sweep.py SIGINT 1 2 5 6`` (delays in seconds after the start, on a
2,000,000-row table), or ``python scripts/interrupt_sweep.py SIGINT --at-temp 15`` (15 releases of
a 200,000-row table, each signalled the instant its temporary files appear). Prints, per run, the
delay, the exit code, the wall time, the files of the folder and the last lines of stderr; an
interrupt must leave exit 130 and the folder as it was (or exit 0 and both outputs).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb


def _table(folder: Path, rows: int) -> None:
    duckdb.execute(
        f"COPY (SELECT i % 7 AS s, (i * 7919) % 100 AS x, 'note ' || i AS t FROM range({rows}) r(i)) "
        f"TO '{folder / 'big.csv'}' (FORMAT csv, HEADER true)"
    )


def _start(folder: Path) -> subprocess.Popen[str]:
    args = ["release", "big.csv", "--secret", "s", "--pair", "1,2", "--public", "x", "--epsilon", "1"]
    return subprocess.Popen(
        [sys.executable, "-m", "pufferfish.cli.app", *args, "--output", "out.csv", "--force"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _clean(folder: Path) -> None:
    for p in folder.iterdir():
        if p.name != "big.csv":
            p.unlink()


def main() -> None:
    sig = getattr(signal, sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if sys.argv[2] == "--at-temp":
            _table(folder, 200_000)
            bad = 0
            for _ in range(int(sys.argv[3])):
                _clean(folder)
                proc = _start(folder)
                while proc.poll() is None and not any(
                    p.name.startswith(".out.csv.") for p in folder.iterdir()
                ):
                    time.sleep(0.001)
                proc.send_signal(sig)
                _, err = proc.communicate()
                names = sorted(p.name for p in folder.iterdir())
                ok = (proc.returncode == 130 and names == ["big.csv"]) or (
                    proc.returncode == 0 and names == ["big.csv", "out.csv", "out.report.json"]
                )
                bad += not ok
                print(proc.returncode, names, err.strip().splitlines()[-1:] if err.strip() else [])
            print(f"{bad} runs left something else")
            return
        _table(folder, 2_000_000)
        for delay in (float(a) for a in sys.argv[2:]):
            _clean(folder)
            t0 = time.monotonic()
            proc = _start(folder)
            time.sleep(delay)
            proc.send_signal(sig)
            _, err = proc.communicate()
            names = sorted(p.name for p in folder.iterdir())
            print(
                delay, proc.returncode, round(time.monotonic() - t0, 2), names, err.strip().splitlines()[-2:]
            )
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
