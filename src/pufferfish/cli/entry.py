"""The ``pufferfish`` command's entry point: a module that imports nothing heavy, so that Ctrl-C
(or SIGTERM) while the libraries load is one line and the usual exit code, not a traceback of
the import machinery (issue 34: 46 lines).

While the command line loads, SIGINT and SIGTERM are only recorded: an import interrupted half-way
can leave a C extension half-registered (measured: SciPy's HiGHS module then failed with
``ImportError: generic_type: type "ObjSense" is already registered!``), so the loading finishes
(about a second) and the command then stops before reading anything.
"""

from __future__ import annotations

import signal
import sys


def main() -> None:
    """Load the command line (:func:`pufferfish.cli.app.main`) and run it.

    Ctrl-C while loading exits with 130, SIGTERM with 143 (``128 + signal``), after one line on
    stderr; nothing has been read or written at that point.
    """
    received: list[int] = []

    def record(signum: int, frame: object) -> None:
        received.append(signum)

    previous = {sig: signal.signal(sig, record) for sig in (signal.SIGINT, signal.SIGTERM)}
    from pufferfish.cli.app import main as cli_main

    for sig, handler in previous.items():
        signal.signal(sig, handler)
    if received:
        print("pufferfish: interrupted while starting; nothing was read or written", file=sys.stderr)
        raise SystemExit(128 + received[-1])
    cli_main()
