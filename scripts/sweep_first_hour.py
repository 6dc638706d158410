"""A sweep of a new user's mistakes and interrupts, as whole processes (issue 56).

Each case runs ``pufferfish`` (the console script beside this interpreter) in a fresh empty folder
holding only the inputs it needs, and is judged on what a user sees:

- a refusal: exit code 1, one line on the terminal (``error: ...``), no ``Traceback``, and no file
  left in the folder but the inputs (and, where the case says so, a file the user had);
- an interrupt (SIGINT at a delay into the README's main job, or SIGTERM): exit code 130 (143 for
  SIGTERM) or 0 if the release had finished, at most one line after the progress, no
  ``Traceback``, and no temporary file left (the output and its report both or neither).

Usage::

    python scripts/sweep_first_hour.py [--interrupts 20] [--out benchmarks/results/sweep_first_hour.txt]

It prints one line per case and the counts; the interrupt delays are a script's, never a test's.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXE = str(Path(sys.executable).with_name("pufferfish"))
TABLE = "s,x,c,w\n" + "".join(
    f"{'a' if i % 3 else 'b'},{i % 7},{'u' if i % 5 else 'v'},{'p' if i % 2 else 'q'}\n" for i in range(300)
)
REL = ["release", "t.csv", "--secret", "s", "--pair", "a,b", "--epsilon", "1"]
X = [*REL, "--public", "x", "--output", "o.csv"]  # the release of x that most cases change one thing of
ADULT = ["release", "adult", "--secret", "sex", "--pair", "Male,Female", "--epsilon", "1"]
SERIES = ["markov", "release", "mvad", "--id", "id", "--time", "month", "--state", "activity",
          "--target-state", "joblessness", "--epsilon", "1", "--prior-set", "none"]  # fmt: skip

#: (name, arguments, setup) -- setup prepares the folder (files the user already has).
CASES: list[tuple[str, list[str], str]] = [
    (
        "no such data",
        shlex.split("release nope.csv --secret s --pair a,b --public x --epsilon 1 --output o.csv"),
        "",
    ),
    ("unknown secret", [*REL[:3], "zz", *REL[4:], "--public", "x", "--output", "o.csv"], ""),
    ("unknown public", [*REL, "--public", "zz", "--output", "o.csv"], ""),
    ("pair value absent", [*REL[:5], "a,zz", *REL[6:], "--public", "x", "--output", "o.csv"], ""),
    ("pair of one value", [*REL[:5], "a,a", *REL[6:], "--public", "x", "--output", "o.csv"], ""),
    ("pair without comma", [*REL[:5], "a", *REL[6:], "--public", "x", "--output", "o.csv"], ""),
    ("epsilon 0", [*REL[:7], "0", "--public", "x", "--output", "o.csv"], ""),
    ("epsilon -1", [*REL[:7], "-1", "--public", "x", "--output", "o.csv"], ""),
    ("epsilon nan", [*REL[:7], "nan", "--public", "x", "--output", "o.csv"], ""),
    ("epsilon inf", [*REL[:7], "inf", "--public", "x", "--output", "o.csv"], ""),
    ("two epsilons", [*REL, "--epsilon", "2", "--public", "x", "--output", "o.csv"], ""),
    ("output .txt", [*REL, "--public", "x", "--output", "o.txt"], ""),
    ("output is the input", [*REL, "--public", "x", "--output", "t.csv", "--force"], ""),
    ("output is a folder", [*REL, "--public", "x", "--output", "."], ""),
    ("output parent", [*REL, "--public", "x", "--output", ".."], ""),
    ("output folder missing", [*REL, "--public", "x", "--output", "no/o.csv"], ""),
    ("output exists", [*REL, "--public", "x", "--output", "old.csv"], "old"),
    ("output immutable --force", [*REL, "--public", "x", "--output", "old.csv", "--force"], "old-immutable"),
    ("output folder read-only", [*REL, "--public", "x", "--output", "ro/o.csv"], "ro"),
    ("report is the output", [*X, "--report", "o.csv"], ""),
    ("report not .html", [*X, "--report", "r.txt"], ""),
    ("ledger is the output", [*X, "--ledger", "o.csv"], ""),
    ("ledger is the report", [*X, "--ledger", "o.report.json"], ""),
    ("ledger in read-only folder", [*X, "--ledger", "ro/l.db"], "ro"),
    ("ledger not a ledger", [*X, "--ledger", "notes.txt"], "notes"),
    ("budget without ledger", [*X, "--budget", "1"], ""),
    ("budget negative", [*X, "--ledger", "l.db", "--budget", "-1"], ""),
    ("unknown mechanism", [*X, "--mechanism", "nope"], ""),
    ("utility on Laplace", [*X, "--utility", "accuracy"], ""),
    ("utility unknown", [*REL, "--public", "c", "--output", "o.csv", "--utility", "nope"], ""),
    ("categorical the secret", [*REL, "--public", "x,c", "--output", "o.csv", "--categorical", "s"], ""),
    ("categorical and numeric", [*X, "--categorical", "x", "--numeric", "x"], ""),
    ("keep empty", [*X, "--keep", ""], ""),
    ("keep the secret", [*X, "--keep", "s"], ""),
    ("keep missing column", [*X, "--keep", "zz"], ""),
    ("keep and keep-unchecked", [*X, "--keep", "w", "--keep-unchecked", "w"], ""),
    ("keep with group-dp", [*X, "--keep", "w", "--mechanism", "group-dp"], ""),
    ("keep-unchecked missing", [*X, "--keep-unchecked", "zz"], ""),
    ("bounds 1e200", [*X, "--bounds", "0,1e200"], ""),
    ("bounds reversed", [*X, "--bounds", "5,1"], ""),
    ("bounds text", [*X, "--bounds", "a,b"], ""),
    ("delta 1", [*X, "--delta", "1"], ""),
    ("confidence 2", [*X, "--confidence", "2"], ""),
    ("prior set unknown", [*X, "--prior-set", "nope"], ""),
    ("weight not a column", [*X, "--weight", "zz"], ""),
    (
        "header-less adult",
        shlex.split(
            "release adult.data --secret marital-status --pair Married-civ-spouse,Never-married "
            "--public workclass --epsilon 0.5 --output o.csv"
        ),
        "adult.data",
    ),
    (
        "empty file",
        shlex.split("release empty.csv --secret s --pair a,b --public x --epsilon 1 --output o.csv"),
        "empty",
    ),
    (
        "binary file",
        shlex.split("release bin.csv --secret s --pair a,b --public x --epsilon 1 --output o.csv"),
        "binary",
    ),
    (
        "ragged rows",
        shlex.split("release ragged.csv --secret s --pair a,b --public x --epsilon 1 --output o.csv"),
        "ragged",
    ),
    ("public is the secret", [*REL, "--public", "s", "--output", "o.csv"], ""),
    (
        "adult unknown pair",
        [*ADULT[:5], "Male,Other", *ADULT[6:], "--public", "age", "--output", "o.csv"],
        "",
    ),
    ("markov unknown state", [*SERIES[:10], "nope", *SERIES[11:], "--output", "m.csv"], ""),
    ("markov unknown column", [*SERIES[:4], "nope", *SERIES[5:], "--output", "m.csv"], ""),
    ("markov output .txt", [*SERIES, "--output", "m.txt"], ""),
    ("markov budget alone", [*SERIES, "--output", "m.csv", "--ledger", "l.db", "--budget", "0.001"], ""),
    (
        "multiuser unknown user",
        shlex.split("multiuser seed000-4users --user nope --pair-set P-Q --epsilon 1"),
        "",
    ),
    ("multiuser no such system", shlex.split("multiuser nope.json --user u4 --pair-set P-Q --epsilon 1"), ""),
    ("ledger show missing", shlex.split("ledger show nope.db"), ""),
    (
        "calibrate bad epsilon",
        shlex.split("calibrate t.csv --secret s --pair a,b --public x --epsilon x"),
        "",
    ),
]


def _lock(path: Path) -> bool:
    if os.geteuid() == 0:
        return subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0
    path.chmod(0o555 if path.is_dir() else 0o444)
    return True


def _unlock(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    path.chmod(0o755 if path.is_dir() else 0o644)


def _prepare(folder: Path, setup: str) -> list[Path]:
    (folder / "t.csv").write_text(TABLE)
    locked: list[Path] = []
    if setup.startswith("old"):
        (folder / "old.csv").write_text("the user's file\n")
        if setup == "old-immutable" and _lock(folder / "old.csv"):
            locked.append(folder / "old.csv")
    if setup == "ro":
        (folder / "ro").mkdir()
        if _lock(folder / "ro"):
            locked.append(folder / "ro")
    if setup == "adult.data":
        from pufferfish.tables.source import dataset_path

        with gzip.open(dataset_path("adult"), "rt") as fh:
            (folder / "adult.data").write_text("".join(list(fh)[1:2000]))
    if setup == "notes":
        (folder / "notes.txt").write_text("my notes\n")
    if setup == "empty":
        (folder / "empty.csv").write_text("")
    if setup == "binary":
        (folder / "bin.csv").write_bytes(bytes(range(256)) * 8)
    if setup == "ragged":
        (folder / "ragged.csv").write_text("s,x\na,1\nb,2,3\n" + "a,1\n" * 5)
    return locked


def _judge_refusal(folder: Path, before: set[str], res: subprocess.CompletedProcess[str]) -> tuple[bool, str]:
    text = (res.stdout + res.stderr).strip()
    lines = text.splitlines()
    left = sorted(set(os.listdir(folder)) - before)
    ok = res.returncode not in (0,) and len(lines) == 1 and "Traceback" not in text and not left
    why = "" if ok else f"exit {res.returncode}, {len(lines)} lines, left {left}"
    return ok, (lines[-1][:150] if lines else "(nothing)") + (f"  [{why}]" if why else "")


def run_refusals(out: list[str]) -> tuple[int, int]:
    good = 0
    for name, args, setup in CASES:
        folder = Path(tempfile.mkdtemp(prefix="sweep-"))
        locked = _prepare(folder, setup)
        before = set(os.listdir(folder))
        try:
            res = subprocess.run([EXE, *args], capture_output=True, text=True, cwd=folder, timeout=600)
            ok, line = _judge_refusal(folder, before, res)
            if setup.startswith("old"):
                ok = ok and (folder / "old.csv").read_text() == "the user's file\n"
        finally:
            for p in locked:
                _unlock(p)
            shutil.rmtree(folder, ignore_errors=True)
        good += ok
        out.append(f"{'ok  ' if ok else 'FAIL'} {name:28s} {line}")
        print(out[-1], flush=True)
    return good, len(CASES)


def run_interrupts(n: int, out: list[str]) -> tuple[int, int]:
    main = ["release", "adult", "--secret", "marital-status", "--pair", "Married-civ-spouse,Never-married",
            "--public", "workclass", "--epsilon", "0.5", "--output", "r.csv"]  # fmt: skip
    good = 0
    for k in range(n):
        delay = 0.1 + k * 0.075  # 0.1 to 1.5 s: the main job takes about 2 s here
        sig = signal.SIGTERM if k % 5 == 4 else signal.SIGINT
        folder = Path(tempfile.mkdtemp(prefix="sweep-int-"))
        try:
            proc = subprocess.Popen([EXE, *main], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)  # fmt: skip
            time.sleep(delay)
            proc.send_signal(sig)
            stdout, stderr = proc.communicate(timeout=600)
            text = (stdout + stderr).strip()
            names = sorted(os.listdir(folder))
            finished = proc.returncode == 0
            expected = 0 if finished else (130 if sig == signal.SIGINT else 143)
            complete = names in ([], ["r.csv", "r.report.json"])
            short = finished or len([x for x in stderr.splitlines() if x.strip()]) <= 1
            ok = proc.returncode == expected and complete and short and "Traceback" not in text
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        good += ok
        what = "finished" if finished else f"exit {proc.returncode}"
        out.append(f"{'ok  ' if ok else 'FAIL'} {sig.name} at {delay:.2f} s: {what}, left {names}")
        print(out[-1], flush=True)
    return good, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--interrupts", type=int, default=20)
    parser.add_argument("--out", default="benchmarks/results/sweep_first_hour.txt")
    args = parser.parse_args()
    out: list[str] = [f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}"]
    refusals = run_refusals(out)
    interrupts = run_interrupts(args.interrupts, out)
    out.append(f"refusals: {refusals[0]} of {refusals[1]} one precise line, nothing left")
    out.append(
        f"interrupts: {interrupts[0]} of {interrupts[1]} clean (exit 130/143 or finished, nothing partial)"
    )
    print("\n".join(out[-2:]))
    Path(args.out).write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
