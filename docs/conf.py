"""Sphinx configuration: API reference from the numpydoc docstrings, doctest-free build."""

from __future__ import annotations

from importlib.metadata import version as _version

project = "pufferfish"
author = "pufferfish developers"
release = _version("pufferfish-privacy")
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.mathjax", "numpydoc"]
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_typehints = "none"
html_theme = "alabaster"
exclude_patterns = ["_build"]
nitpicky = False


def _write_registry_table() -> None:
    """docs/generated/registry.rst: the mechanism table, generated from the registry."""
    from pathlib import Path

    from pufferfish.calibration import mechanism_table

    out = Path(__file__).parent / "generated" / "registry.rst"
    out.parent.mkdir(exist_ok=True)
    out.write_text(mechanism_table(), encoding="utf-8")


_write_registry_table()
