"""Where a release goes: output paths checked before any work, and one atomic write.

Outputs (the released table, its JSON report, the HTML report) are written by
:func:`atomic_outputs`: to temporary files in the same folder, then linked into place together,
so a failure or an interrupt never leaves a partial file, a release is never published without
its report, and an existing file is never replaced without ``force``. :func:`check_output_path`
refuses, before any work, a path that cannot be written or replaced (a missing or read-only
folder, an immutable file). This module imports neither DuckDB nor Spark.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pufferfish.tables.errors import DataError, OutputExistsError


def _exists(kind: str, path: Path) -> OutputExistsError:
    return OutputExistsError(
        f"{kind} file {str(path)!r} exists; pass --force to overwrite it (force=True in Python)"
    )


def check_output_path(path: str | Path, *, force: bool, kind: str = "output", folder: bool = False) -> Path:
    """``path`` as a Path if a file may be written there, checked before any work is done.

    Parameters
    ----------
    path : str or pathlib.Path
        The file to write.
    force : bool
        Whether an existing file may be replaced.
    kind : str
        What the file is, for messages (``"output"``, ``"report"``).
    folder : bool
        The output is a folder (Spark's part files): an existing folder is replaced with
        ``force``, else it "exists"; a file output never replaces a folder.

    Raises
    ------
    TypeError
        If ``force`` is not a bool.
    ValueError
        If the folder does not exist or a file cannot be created in it (read-only, immutable),
        ``path`` is a folder and ``force`` is false, or an existing file cannot be replaced (it is
        immutable or append-only: it cannot be opened for writing).
    OutputExistsError
        If the file exists and ``force`` is false.
    """
    if not isinstance(force, bool):  # 'no' is a true value: never read a text as permission
        raise TypeError(f"force must be True or False, got {force!r}")
    out = Path(path)
    if not out.parent.is_dir():
        raise ValueError(f"{kind} folder must exist, got {str(out.parent)!r}")
    if out.is_dir() and not folder:  # a file never replaces a folder: --force is no way on for it
        raise ValueError(f"{kind} {str(out)!r} is a folder: give the path of a file")
    if out.exists() and not force:
        raise _exists(kind, out)
    _check_writable(out, kind)
    return out


def unwritable(path: Path) -> tuple[str, str] | None:
    """Why ``path`` cannot be written, probed before any work: ``("folder", reason)`` when no file
    can be created in its folder (probed by creating and removing one of this process's hidden
    temporary files, as :func:`atomic_outputs` will), ``("file", reason)`` when the existing file
    cannot be opened for writing (immutable, read-only for this user; opened to append, nothing
    written, and closed); None when both can. Used for outputs and for the ledger.

    The probe file is created and removed with Ctrl-C and SIGTERM held back
    (:func:`_signals_deferred`): an interrupt between the two would leave it in the user's folder."""
    try:
        with _signals_deferred():
            fd, name = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=path.parent)
            os.close(fd)
            os.unlink(name)
    except OSError as exc:
        return "folder", str(exc.strerror or exc)
    if path.is_file():
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
        except OSError as exc:
            return "file", str(exc.strerror or exc)
    return None


def _check_writable(out: Path, kind: str) -> None:
    """ValueError, before any work, if ``out`` cannot be published (:func:`unwritable`)."""
    found = unwritable(out)
    if found is not None and found[0] == "folder":
        raise ValueError(
            f"{kind} folder {str(out.parent)!r} does not take new files ({found[1]}): make it writable "
            "or give a path in another folder"
        )
    if found is not None:
        raise ValueError(
            f"{kind} {str(out)!r} cannot be replaced ({found[1]}: it is read-only, immutable or "
            "append-only): make it writable (chattr -i / chmod u+w) or give another path"
        )


#: Marker in the name of every temporary file and folder the package creates:
#: ``.NAME.pufferfish-PID-XXXX.tmp`` beside an output (hidden: a leading dot), and
#: ``pufferfish-duckdb-PID`` (DuckDB's spill folder) in the system's temporary folder.
TEMP_MARK = "pufferfish"


def temp_prefix(final: Path) -> str:
    """``.NAME.pufferfish-PID-``: the start of the name of this process's temporary files for
    the output ``final`` (hidden, recognisable, and naming the process that owns it)."""
    return f".{final.name}.{TEMP_MARK}-{os.getpid()}-"


#: Any output's temporary file, ``.NAME.pufferfish-PID-XXXX.tmp`` (:func:`temp_prefix`), and
#: DuckDB's spill folders, ``pufferfish-duckdb-PID-N``: group 1 is the process id.
TEMP_NAME = re.compile(r"^\..+\." + TEMP_MARK + r"-(\d+)-[^/]*\.tmp$")
SPILL_NAME = re.compile("^" + TEMP_MARK + r"-duckdb-(\d+)-")


def remove_stale(folder: Path, pattern: re.Pattern[str] = TEMP_NAME) -> list[Path]:
    """Remove the files and folders of ``folder`` whose name matches ``pattern`` (group 1 a process
    id) and whose process no longer runs: left by a run that was killed (SIGKILL, a power cut),
    they may hold drawn noise; by default every output's temporary file, whatever the output's
    name (issue 54). A process that still runs keeps its files: two runs writing at once do not
    remove each other's (issue 34). Returns the paths removed; one that cannot be removed is left.
    """
    removed: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match is None or process_alive(int(match.group(1))):
            continue
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry)
        except OSError:
            continue
    return removed


@functools.cache
def remove_stale_spills() -> None:
    """Remove DuckDB's spill folders left by killed runs (``pufferfish-duckdb-PID-N`` in the
    system's temporary folder), once per process rather than at every connection."""
    remove_stale(Path(tempfile.gettempdir()), SPILL_NAME)


_SPILLS = itertools.count()


def spill_path() -> Path:
    """A new path ``pufferfish-duckdb-PID-N`` in the system's temporary folder, not created: this
    process's scratch data (DuckDB's spill folder, a shuffled release's buckets), matched by
    :data:`SPILL_NAME`, so that the next run removes it if this one is killed
    (:func:`remove_stale_spills`, called here first)."""
    remove_stale_spills()
    return Path(tempfile.gettempdir()) / f"{TEMP_MARK}-duckdb-{os.getpid()}-{next(_SPILLS)}"


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (a process of another user counts)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


@contextmanager
def atomic_outputs(
    finals: Sequence[Path], *, force: bool, kinds: Sequence[str] | None = None
) -> Iterator[list[Path]]:
    """Temporary files beside ``finals`` to write into; published together when the block ends.

    Each temporary file is created empty in its final file's folder with the permissions a new
    file gets (umask), named ``.NAME.pufferfish-PID-XXXX.tmp`` (:func:`temp_prefix`); such files
    left by a killed run (whose process no longer runs) are removed first (:func:`remove_stale`).
    If the block raises (an error, or ``KeyboardInterrupt`` on Ctrl-C), every
    temporary file is removed and no final file is touched. Otherwise each replaces its final
    file (``force``) or is hard-linked to it, which fails if the final file appeared in the
    meantime (no race replaces a file the user did not allow to replace). The temporary files
    are created, and the final files published one after the other, with Ctrl-C and SIGTERM held
    back (:func:`_signals_deferred`), so an interrupt leaves no temporary file and all of the
    final files published or none; a link that fails removes the files this call already linked.

    Parameters
    ----------
    finals : sequence of pathlib.Path
        The files to publish, in distinct paths.
    force : bool
        Replace existing files.
    kinds : sequence of str, optional
        What each file is, for messages (default ``"output"`` for each).

    Yields
    ------
    list of pathlib.Path
        One temporary file per final file, in the same order.

    Raises
    ------
    ValueError
        If a final path is a folder (before anything is created).
    OutputExistsError
        If a final file exists when publishing and ``force`` is false.
    """
    kinds = list(kinds) if kinds is not None else ["output"] * len(finals)
    for final, kind in zip(finals, kinds, strict=True):
        if final.is_dir():  # a file never replaces a folder, so nothing is published (issue 44)
            raise ValueError(f"{kind} {str(final)!r} is a folder: give the path of a file")
    temps: list[Path] = []
    try:
        with _signals_deferred():  # an interrupt here would leave a file this call does not know
            umask = os.umask(0)  # (or the umask at 0)
            os.umask(umask)
            for folder in dict.fromkeys(final.parent for final in finals):
                remove_stale(folder)
            for final in finals:
                fd, name = tempfile.mkstemp(prefix=temp_prefix(final), suffix=".tmp", dir=final.parent)
                os.close(fd)
                temps.append(Path(name))
                os.chmod(name, 0o666 & ~umask)
        try:
            yield temps
        except (OSError, DataError) as exc:  # name the user's file, not the temporary one (issue 44)
            named = {str(t): str(f) for t, f in zip(temps, finals, strict=True)}
            if isinstance(exc, OSError):
                if exc.filename is not None and str(exc.filename) in named and exc.errno is not None:
                    raise OSError(exc.errno, exc.strerror, named[str(exc.filename)]) from None
                raise
            text = str(exc)
            for tmp_name, final_name in named.items():  # an engine's message quoting the path
                text = text.replace(tmp_name, final_name)
            if text != str(exc):
                raise DataError(text) from None
            raise
        with _signals_deferred():
            linked: list[Path] = []
            try:
                for tmp, final, kind in zip(temps, finals, kinds, strict=True):
                    if force:
                        os.replace(tmp, final)
                    else:
                        _link(tmp, final, kind)
                        linked.append(final)
            except OSError as exc:  # changed since the check at the edge (check_output_path)
                failed = final
                for final in linked:  # not force: these paths were free before this call
                    final.unlink(missing_ok=True)
                if isinstance(exc, OutputExistsError):
                    raise
                done = finals[: finals.index(failed)]
                what = "nothing was published"
                if force and done:
                    what = f"already replaced: {', '.join(map(str, done))}"
                raise OSError(
                    exc.errno,
                    f"{exc.strerror}: {kind} {str(failed)!r} could not be published (immutable, read-only or "
                    f"its folder changed since the release began); {what}",
                ) from None
            except BaseException:
                for final in linked:  # not force: these paths were free before this call
                    final.unlink(missing_ok=True)
                raise
    finally:
        for tmp in temps:
            tmp.unlink(missing_ok=True)


def _link(tmp: Path, final: Path, kind: str) -> None:
    """Publish ``tmp`` at the free path ``final``: a hard link, which fails if ``final`` exists."""
    try:
        os.link(tmp, final)
    except FileExistsError:
        raise _exists(kind, final) from None
    except OSError:  # file system without hard links
        if final.exists():
            raise _exists(kind, final) from None
        os.replace(tmp, final)


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold back the Python handlers of SIGINT and SIGTERM for the block; run them at its end.

    Python runs a signal's handler in the main thread between two bytecodes. For the block,
    each handler that is a Python function (SIGINT's default raises ``KeyboardInterrupt``; the
    CLI gives SIGTERM one that does too) is replaced by one that only records the signal; when
    the block ends the handlers are restored and the first recorded signal's handler is run.
    A signal left to the operating system (default action, ignored) is not touched; outside the
    main thread, where handlers cannot be changed and none run, the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held: dict[int, Callable[[int, Any], Any]] = {}
    for s in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(s)
        if callable(handler):
            held[s] = handler
            signal.signal(s, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for signum, handler in held.items():
            signal.signal(signum, handler)
    if caught:
        held[caught[0]](caught[0], None)


def write_text(text: str, final: Path, *, force: bool, kind: str = "output") -> Path:
    """Write ``text`` (UTF-8) to ``final`` through :func:`atomic_outputs`; returns ``final``."""
    with atomic_outputs([final], force=force, kinds=[kind]) as (tmp,):
        tmp.write_text(text, encoding="utf-8")
    return final


def publish_folder(tmp: Path, final: Path, *, force: bool, kind: str = "output") -> None:
    """Publish the folder ``tmp`` (a Spark output written beside ``final``) at ``final``: renamed
    into place; an existing ``final`` (only with ``force``) is first renamed aside, and removed
    once the new one is in place (put back if the rename fails), so a failure never loses it.

    Raises
    ------
    OutputExistsError
        If ``final`` exists and ``force`` is false.
    OSError
        If a rename fails (``final`` is then as it was).
    """
    with _signals_deferred():
        if not final.exists():
            os.rename(tmp, final)
            return
        if not force:
            raise _exists(kind, final)
        aside = Path(tempfile.mkdtemp(prefix=temp_prefix(final), suffix=".tmp", dir=final.parent))
        aside.rmdir()
        os.rename(final, aside)
        try:
            os.rename(tmp, final)
        except OSError:
            os.rename(aside, final)
            raise
        if aside.is_dir() and not aside.is_symlink():
            shutil.rmtree(aside, ignore_errors=True)
        else:
            aside.unlink(missing_ok=True)
