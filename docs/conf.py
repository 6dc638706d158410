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
    """docs/generated/registry.rst and user_registry.rst: the mechanism tables, generated from the
    two registries (table releases; multi-user sums)."""
    from pathlib import Path

    from pufferfish.calibration import mechanism_table
    from pufferfish.multiuser import user_mechanism_table

    out = Path(__file__).parent / "generated"
    out.mkdir(exist_ok=True)
    (out / "registry.rst").write_text(mechanism_table(), encoding="utf-8")
    (out / "user_registry.rst").write_text(user_mechanism_table(), encoding="utf-8")


_write_registry_table()
