"""The README's tour: run each stop's command in a fresh folder, keep one figure of each, print the
numbers the README quotes.

Run: ``python scripts/tour_figures.py [OUT]`` (default ``docs/figures``). Every command is the
``pufferfish`` command line exactly as the README writes it (in a temporary folder); a figure is
taken from the HTML report the command wrote (its ``<figure>`` SVG, as drawn there), or, for the
stop without an HTML report (several releases), drawn here from ``ledger show --json`` after each
release. Writes ``tour-*.svg`` into OUT.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

#: (name, the README's commands, the report and figure id kept, or None: drawn from --json)
STOPS = [
    (
        "number",
        ["pufferfish release adult --secret sex --pair Male,Female --public age --epsilon 1 "
         "--output age.csv --report age.html"],
        ("age.html", "fig-release"),
    ),
    (
        "labels",
        ["pufferfish release adult --secret marital-status --pair Married-civ-spouse,Never-married "
         "--public workclass --epsilon 0.5 --output workclass.csv --report workclass.html"],
        ("workclass.html", "fig-release"),
    ),
    (
        "columns",
        ["pufferfish release adult --secret sex --pair Male,Female --public workclass,age --epsilon 1 "
         "--output joint.csv --report joint.html"],
        ("joint.html", "fig-joint-priors"),
    ),
    (
        "series",
        ["pufferfish markov calibrate mvad --id id --time month --state activity --target-state joblessness "
         "--epsilon 1 --prior-set none --report mvad.html"],
        ("mvad.html", "fig-scales"),
    ),
    (
        "sum",
        ["pufferfish multiuser seed000-4users --user u4 --pair-set P-Q --epsilon 0.25 "
         "--epsilon 0.5 --epsilon 1 --epsilon 2 --report sum.html --json"],
        ("sum.html", "fig-scales"),
    ),
    (
        "ledger",
        [
            "pufferfish release adult --secret sex --public age --pair Male,Female --epsilon 0.5 "
            f"--mechanism optimal --prior-set none --output age{i}.csv --ledger adult.ledger"
            for i in (1, 2, 3)
        ],
        None,
    ),
    (
        "property",
        ['pufferfish property calibrate adult --property "income=>50K" --rows 100 --epsilon 0.5 '
         "--epsilon 1 --epsilon 2 --report property.html"],
        ("property.html", "fig-scales-0"),
    ),
]  # fmt: skip

ROOT = Path(__file__).resolve().parents[1]


def run(command: str, folder: Path) -> str:
    """Run one command (``pufferfish`` as this interpreter's module) in ``folder``; its stdout."""
    args = shlex.split(command)
    args = [a.replace("examples/", str(ROOT / "examples") + "/") for a in args]
    done = subprocess.run(
        [sys.executable, "-m", "pufferfish.cli.app", *args[1:]],
        cwd=folder, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"failed: {command}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def figure_svg(page: Path, fig_id: str) -> str:
    """The SVG of one ``<figure>`` of a report."""
    found = re.search(rf'<figure id="{fig_id}">.*?(<svg.*?</svg>)', page.read_text(), re.S)
    if found is None:
        raise SystemExit(f"{page.name} has no figure {fig_id}")
    return found.group(1)


def ledger_figure(together: list[float]) -> str:
    """The exact joint loss of 1, 2, 3 releases against the sum of their epsilons."""
    from matplotlib.figure import Figure

    from pufferfish.pipeline.page import svg_text

    n = list(range(1, len(together) + 1))
    fig = Figure(figsize=(5.0, 3.2))
    ax = fig.subplots()
    ax.plot(n, [0.5 * k for k in n], "--", marker="o", color="grey", label="sum of the epsilons")
    ax.plot(n, together, "-", marker="o", color="#cc6677", label="exact joint check (ledger show)")
    for k, value in zip(n, together, strict=True):
        ax.annotate(
            f"{value:.3f}", (k, value), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7
        )
    ax.set_xticks(n)
    ax.set_xlabel("releases of age (each at eps 0.5)")
    ax.set_ylabel("privacy loss together (nats)")
    ax.legend(fontsize=7)
    return svg_text(fig)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "figures"
    out.mkdir(parents=True, exist_ok=True)
    for name, commands, keep in STOPS:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            if name == "ledger":  # the ledger after each release
                together = []
                for c in commands:
                    run(c, folder)
                    shown = json.loads(run("pufferfish ledger show adult.ledger --json", folder))
                    together.append(shown["together"][0]["epsilon"])
                svg = ledger_figure(together)
                print(f"{name}: together after 1, 2, 3 releases: {together}")
            elif name == "property":
                assert keep is not None
                run(commands[0], folder)
                page = folder / keep[0]
                svg = figure_svg(page, keep[1])
                report = json.loads(page.read_text().split('id="report-json">')[1].split("</script>")[0])
                rows = report["statistics"][0]["results"]
                print(f"{name}: {commands[0]}")
                for mech in ("optimal", "group-dp"):
                    print(f"  {mech}: {[(r['epsilon'], r['scale']) for r in rows if r['mechanism'] == mech]}")
            elif name == "sum":
                assert keep is not None
                output = run(commands[0], folder)
                svg = figure_svg(folder / keep[0], keep[1])
                rows = json.loads(output)["results"]
                print(f"{name}: {commands[0]}")
                at_one = [(r["mechanism"], r.get("scale")) for r in rows if r["epsilon"] == 1.0]
                print(f"  scales at eps 1: {at_one}")
            else:
                assert keep is not None
                run(commands[0], folder)
                page = folder / keep[0]
                svg = figure_svg(page, keep[1])
                text = page.read_text()
                report = json.loads(text.split('id="report-json">')[1].split("</script>")[0])
                rows = report.get("results", [])
                if isinstance(rows, dict):  # a series: rows per length
                    rows = [r for length_rows in rows.values() for r in length_rows]
                chosen = (
                    report.get("chosen")
                    or report.get("release")
                    or next((r for r in rows if r.get("mechanism") == "optimal"), {})
                )
                keys = ("mechanism", "scale", "checked_loss", "expected_accuracy")
                print(f"{name}: {commands[0]}")
                print(f"  chosen: {json.dumps({k: chosen.get(k) for k in keys})}")
            (out / f"tour-{name}.svg").write_text(svg, encoding="utf-8")
    print(f"written: {', '.join(sorted(p.name for p in out.glob('tour-*.svg')))} in {out}")


if __name__ == "__main__":
    main()
