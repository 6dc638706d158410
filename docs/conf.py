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
