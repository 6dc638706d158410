"""Run an iterator one step ahead of its consumer, in a background thread.

A release perturbs batch ``i + 1`` (the secure sampler on every core) while DuckDB writes batch
``i``: without it the two take turns and each leaves cores idle (issue 45).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_DONE = object()


@contextmanager
def read_ahead(items: Iterator[T], depth: int = 1) -> Iterator[Iterator[T]]:
    """The items of ``items``, computed by a background thread at most ``depth`` ahead of the
    consumer, in order.

    Parameters
    ----------
    items : iterator
        Consumed only by the background thread.
    depth : int
        Items computed and not yet taken, at most (>= 1).

    Yields
    ------
    iterator
        The same items in the same order. An exception raised by ``items`` is raised again by
        this iterator at the same position. On leaving the context the thread is told to stop
        and joined (it finishes the item it is computing).
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    ready: queue.Queue[tuple[object, BaseException | None]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: tuple[object, BaseException | None]) -> bool:
        while not stop.is_set():
            try:
                ready.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            put((_DONE, exc))
            return
        put((_DONE, None))

    def taken() -> Iterator[T]:
        while True:
            item, error = ready.get()
            if error is not None:
                raise error
            if item is _DONE:
                return
            yield item  # type: ignore[misc]

    thread = threading.Thread(target=work, name="pufferfish-read-ahead", daemon=True)
    thread.start()
    try:
        yield taken()
    finally:
        stop.set()
        thread.join()
