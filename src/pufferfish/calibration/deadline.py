"""A linear program solved with a hard deadline: HiGHS's own time limit is checked only between
interior-point iterations, so a large LP can overrun it by minutes (issue 33). Above
:data:`LP_IN_PROCESS` variables the LP runs in a child process that is killed at the deadline.
"""

from __future__ import annotations

from typing import Any

from scipy.optimize import linprog

#: LPs with more variables than this are solved in a child process that is stopped at the time
#: limit: HiGHS's interior point checks its clock only between iterations, and one iteration of a
#: large LP (k = 120 labels with prior sets: 86,000 variables) ran for minutes past a 2 s limit.
LP_IN_PROCESS = 20_000


def _solve(problem: dict[str, Any], conn: Any) -> None:  # pragma: no cover - runs in the child
    import signal

    for sig in (signal.SIGINT, signal.SIGTERM):  # the parent's handlers (the CLI's) do not apply here
        signal.signal(sig, signal.SIG_DFL)
    res = linprog(**problem)
    conn.send({"status": res.status, "message": res.message, "x": res.x, "fun": res.fun})
    conn.close()


def linprog_within(problem: dict[str, Any], time_limit: float) -> Any:
    """``scipy.optimize.linprog(**problem)`` in a child process, killed after ``time_limit``
    seconds plus 5 s of start-up.

    Parameters
    ----------
    problem : dict
        The keyword arguments of :func:`scipy.optimize.linprog`.
    time_limit : float
        Seconds, > 0.

    Returns
    -------
    object or None
        The result's fields ``status, message, x, fun`` (``status`` 4 when the child ended
        without an answer, e.g. out of memory), or None when it was stopped at the deadline.
    """
    import multiprocessing as mp
    from types import SimpleNamespace

    ctx: Any = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_solve, args=(problem, child), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(time_limit + 5.0):
            return None
        return SimpleNamespace(**parent.recv())
    except EOFError:  # the child died (out of memory): no answer
        return SimpleNamespace(status=4, message="the LP's process ended without an answer", x=None, fun=None)
    finally:
        if proc.is_alive():
            proc.kill()  # SIGKILL: HiGHS does not stop between its checks of the clock
        proc.join(5.0)
        parent.close()
