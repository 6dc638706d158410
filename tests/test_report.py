"""HTML reports, tested as a person sees them: rendered in headless Chromium.

The browser test needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them)
and selenium (``test`` extra); without them it is skipped. The other tests need neither.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from pufferfish.cli.app import app
from pufferfish.pipeline.page import row_key
from pufferfish.pipeline.report import FIGURES, MAPPING_FIGURES
from pufferfish.tables.model import label_text

ADULT = ["adult", "--secret", "marital-status", "--pair", "Married-civ-spouse,Never-married"]


def _run(args: list[str]) -> Any:
    result = CliRunner().invoke(app, args)
    return result


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A calibration report (categorical workclass), a release report (age, GMM prior) and the
    release of labels of the README's main job (workclass by optimal-mapping)."""
    folder = tmp_path_factory.mktemp("reports")
    cal_html = folder / "calibrate.html"
    res = _run(
        [
            "calibrate",
            *ADULT,
            "--public",
            "workclass",
            "--epsilon",
            "0.5",
            "--mechanism",
            "all",
            "--json",
            "--report",
            str(cal_html),
        ]
    )
    assert res.exit_code == 0, res.output
    cal_json = json.loads(res.output)
    rel_html, rel_out = folder / "release.html", folder / "age.csv"
    res = _run(
        [
            "release",
            *ADULT,
            "--public",
            "age",
            "--epsilon",
            "1",
            "--prior",
            "gmm:2",
            "--compare",
            "--output",
            str(rel_out),
            "--report",
            str(rel_html),
        ]
    )
    assert res.exit_code == 0, res.output
    rel_json = json.loads((folder / "age.report.json").read_text())
    lab_html, lab_out = folder / "labels.html", folder / "workclass.csv"  # the README's main job
    res = _run(
        ["release", *ADULT, "--public", "workclass", "--epsilon", "0.5", "--output", str(lab_out),
         "--report", str(lab_html)]
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    lab_json = json.loads((folder / "workclass.report.json").read_text())
    return {
        "calibrate": (cal_html, cal_json),
        "release": (rel_html, rel_json),
        "labels": (lab_html, lab_json),
    }


def _shown(page: str) -> dict[str, str]:
    """``data-key -> shown text`` of every keyed cell of the page."""
    return {k: v for k, v in re.findall(r'data-key="([^"]+)">([^<]*)<', page)}


def _numbers_match(
    shown: dict[str, str], payload: dict[str, Any], rows_key: str, *, numeric: bool = True
) -> int:
    """Assert every mechanism's scale, variance and check shown equals the JSON; count them. A
    categorical column shows no mean absolute error (labels have no distance); a comparison of
    mappings only shows no scale."""
    checked = 0
    additive = any(row.get("scale") is not None for row in payload[rows_key] if "reason" not in row)
    for row in payload[rows_key]:
        if "reason" in row:
            continue
        m = row_key(row)
        if row.get("expected_accuracy") is not None:
            assert float(shown[f"accuracy:{m}"]) == pytest.approx(row["expected_accuracy"], rel=5e-6)
            if numeric:
                assert float(shown[f"abs_error:{m}"]) == pytest.approx(row["expected_abs_error"], rel=5e-6)
            else:
                assert f"abs_error:{m}" not in shown
        if row.get("scale") is None:  # a randomized mapping: its matrix, no scale
            assert (shown[f"scale:{m}"] == "-" if additive else f"scale:{m}" not in shown) and row["matrix"]
            assert float(shown[f"checked:{m}"]) == pytest.approx(row["checked_loss"], rel=5e-6, abs=1e-300)
            checked += 1
            continue
        assert float(shown[f"scale:{m}"]) == pytest.approx(row["scale"], rel=5e-6)
        assert float(shown[f"variance:{m}"]) == pytest.approx(row["variance"], rel=5e-6)
        check = next(
            row[k] for k in ("checked_loss", "checked_delta", "checked_information") if row[k] is not None
        )
        assert float(shown[f"checked:{m}"]) == pytest.approx(check, rel=5e-6, abs=1e-300)
        checked += 1
    return checked


def test_report_is_self_contained_and_its_numbers_are_the_json_numbers(reports: dict[str, Any]) -> None:
    cal_html, cal_json = reports["calibrate"]
    page = cal_html.read_text()
    assert not re.search(r'<(link|img|script)[^>]+(src|href)="https?:', page)  # nothing to fetch
    assert all(f'<figure id="{f}">' in page for f in (*FIGURES, *MAPPING_FIGURES))  # workclass: mappings
    assert page.count("<svg") == len(FIGURES) + len(MAPPING_FIGURES)
    shown = _shown(page)
    # l1, optimal on the DKW sets, optimal on the estimate, and the four randomized mappings
    assert _numbers_match(shown, cal_json, "results", numeric=False) == 7
    assert shown["rows_total"] == f"{cal_json['rows_total']:,}" == "48,842"
    assert shown["rows_dropped"] == f"{cal_json['rows_dropped_missing']:,}"
    assert len(cal_json["mapping"]) == 9 and cal_json["mapping"][-1]["label"] is None  # a missing cell
    for item in cal_json["mapping"]:
        assert shown[f"code:{item['label'] or '(missing)'}"] == str(item["code"])
    embedded = re.search(r'<script type="application/json" id="report-json">(.*?)</script>', page, re.S)
    assert embedded is not None and json.loads(embedded.group(1)) == cal_json

    rel_html, rel_json = reports["release"]
    page = rel_html.read_text()
    assert '<figure id="fig-release">' in page and page.count("<svg") == len(FIGURES) + 1
    shown = _shown(page)
    assert _numbers_match(shown, rel_json, "mechanisms") >= 2
    assert float(shown["chosen:scale"]) == pytest.approx(rel_json["chosen"]["scale"], rel=5e-6)


def test_an_existing_report_is_not_overwritten(reports: dict[str, Any], tmp_path: Path) -> None:
    target = tmp_path / "keep.html"
    target.write_text("mine")
    res = _run(["calibrate", *ADULT, "--public", "workclass", "--epsilon", "0.5", "--report", str(target)])
    assert res.exit_code == 1 and "exists; pass --force" in res.output
    assert target.read_text() == "mine"
    res = _run(
        [
            "calibrate",
            *ADULT,
            "--public",
            "workclass",
            "--epsilon",
            "0.5",
            "--report",
            str(tmp_path / "x.pdf"),
        ]
    )
    assert res.exit_code == 1 and "report must be an .html file" in res.output


def _browser() -> Any:
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.skip("needs Debian's chromium and chromium-driver (installed by .ci/run)")
    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,1000"):
        opts.add_argument(arg)
    opts.binary_location = chromium
    return webdriver.Chrome(options=opts, service=Service(driver))


@pytest.mark.slow
def test_reports_render_in_headless_chromium(reports: dict[str, Any], tmp_path: Path) -> None:
    """Every figure is drawn (a box of real size with ink in it) and the numbers on screen are the
    JSON report's numbers."""
    from PIL import Image
    from selenium.webdriver.common.by import By

    browser = _browser()
    try:
        expected_figures = {
            "calibrate": [*FIGURES, *MAPPING_FIGURES],
            "release": [*FIGURES, "fig-release"],
            "labels": ["fig-priors", *MAPPING_FIGURES, "fig-release"],
        }
        for name, rows_key in (("calibrate", "results"), ("release", "mechanisms"), ("labels", "mechanisms")):
            page, payload = reports[name]
            browser.get(page.resolve().as_uri())
            figures = browser.find_elements(By.CSS_SELECTOR, "figure")
            expected = expected_figures[name]
            assert [f.get_attribute("id") for f in figures] == expected
            for fig in figures:
                svg = fig.find_element(By.TAG_NAME, "svg")
                assert svg.size["width"] > 200 and svg.size["height"] > 150, fig.get_attribute("id")
                pixels = np.asarray(Image.open(io.BytesIO(svg.screenshot_as_png)).convert("L"))
                ink = float((pixels < 200).mean())
                assert 0.01 < ink < 0.6, (fig.get_attribute("id"), ink)  # drawn, not blank or black
            shown = {
                e.get_attribute("data-key"): e.text
                for e in browser.find_elements(By.CSS_SELECTOR, "[data-key]")
            }
            assert _numbers_match(shown, payload, rows_key, numeric=name == "release") >= 2
            assert browser.save_screenshot(str(tmp_path / f"{name}.png"))
            assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    finally:
        browser.quit()


def test_release_outputs_are_all_or_nothing(tmp_path, monkeypatch) -> None:
    """Issue 44: the data, its JSON report and the HTML report are published together or none is
    (a failing HTML report no longer leaves the data written, which a re-run with --force would
    release twice with fresh noise)."""
    import pandas as pd
    from typer.testing import CliRunner

    import pufferfish.pipeline.release as rel
    from pufferfish.cli.app import app

    src = tmp_path / "t.csv"
    pd.DataFrame({"s": ["A", "B"] * 100, "x": [float(i % 7) for i in range(200)]}).to_csv(src, index=False)
    out, rep = tmp_path / "o.csv", tmp_path / "o.html"
    args = ["release", str(src), "--secret", "s", "--public", "x", "--pair", "A,B", "--epsilon", "1",
            "--prior-set", "none", "--output", str(out), "--report", str(rep)]  # fmt: skip

    def broken(*_: object, **__: object) -> str:
        raise ValueError("the report cannot be drawn")

    monkeypatch.setattr(rel, "html_report_text", broken)
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 1 and "the report cannot be drawn" in run.output
    assert not out.exists() and not (tmp_path / "o.report.json").exists() and not rep.exists()
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left
    monkeypatch.undo()
    rep.mkdir()  # a folder where the report goes: refused before any work, even with --force
    run = CliRunner().invoke(app, [*args, "--force"])
    assert run.exit_code != 0 and not out.exists() and not (tmp_path / "o.report.json").exists()
    rep.rmdir()
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    assert out.exists() and (tmp_path / "o.report.json").exists() and "<svg" in rep.read_text()


def test_the_report_of_a_release_of_labels_names_only_what_was_released(reports: dict[str, Any]) -> None:
    """Issue 46: the main job's report (workclass released by optimal-mapping) draws the mapping's
    figures, labels by name and probabilities; no figure of added noise, no scale, no noise used."""
    page_path, payload = reports["labels"]
    page = page_path.read_text()
    ids = re.findall(r'<figure id="([^"]+)">', page)
    assert ids == ["fig-priors", *MAPPING_FIGURES, "fig-release"]
    for absent in (
        "Kantorovich",
        "Scale versus epsilon",
        "Privacy loss versus scale",
        "density",
        "laplace scale",
    ):
        assert absent not in page, absent
    shown = _shown(page)
    assert shown["input:noise"].endswith("(not used: the mechanisms compared release labels)")
    assert not any(key.startswith(("scale:", "variance:", "abs_error:")) for key in shown)
    assert ".;" not in page and "Noise: integer sampling" in page  # one sentence each
    release = re.search(r'<figure id="fig-release">(.*?)</figure>', page, re.S)
    assert release is not None
    text = release.group(1)
    assert "Labels in the table and in the release" in text and "share of the secret" in text
    for label in ("Federal-gov", "Private", "Without-pay", "(missing)"):
        assert label in text, label  # tick labels by name, the missing cells as their label
    counts = payload["noise"]["counts"]
    assert counts["output"][counts["values"].index(None)] > 0  # the missing label is released too


def test_label_histograms_count_empty_cells_as_the_missing_label(tmp_path: Path) -> None:
    from pufferfish.tables import estimate_priors
    from pufferfish.tables.histograms import released_histograms
    from pufferfish.tables.source import resolve_source

    data = tmp_path / "t.csv"
    data.write_text("s,c\na,x\na,\nb,y\nb,x\na,y\n")
    est = estimate_priors(str(data), secret="s", public="c", pairs=[("a", "b")], categorical=["c"])
    out = tmp_path / "out.csv"
    out.write_text("c\n\nx\ny\n\nx\n")  # released: missing, x, y, missing, x
    hist = released_histograms(out, est, resolve_source(str(data)), labels=True)
    code = {label_text(label): int(c) for label, c in est.mapping}
    by_secret = {h.secret: h.counts for h in hist}
    assert by_secret["a"][code["(missing)"]] == 1 and by_secret["a"][code["x"]] == 2
    assert by_secret["b"][code["(missing)"]] == 1 and by_secret["b"][code["y"]] == 1


def test_the_report_of_a_numeric_release_names_only_what_was_released(reports: dict[str, Any]) -> None:
    """Issue 46: one numeric column released with noise: the figures of added noise and the
    released values, no mapping's figure, the mean absolute error shown; inputs rounded for reading."""
    from pufferfish.pipeline.report import _readable

    page_path, _ = reports["release"]
    page = page_path.read_text()
    assert re.findall(r'<figure id="([^"]+)">', page) == [*FIGURES, "fig-release"]
    for absent in (
        "Randomized mapping",
        "Labels in the table",
        "Accuracy versus epsilon",
        "not used: the mechanisms",
    ):
        assert absent not in page, absent
    shown = _shown(page)
    assert any(key.startswith("abs_error:") for key in shown) and any(
        key.startswith("scale:") for key in shown
    )
    assert _readable([60.0, 24.200000000186265]) == "[60, 24.2]" and _readable(0.5) == "0.5"
    assert _readable(["a", 1.0]) == '["a", 1]' and _readable("as written 0.30000000000000004") == (
        "as written 0.30000000000000004"
    )
