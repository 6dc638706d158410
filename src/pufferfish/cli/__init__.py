"""The ``pufferfish`` command line: a thin layer over the public API (:mod:`~pufferfish.cli.app`
for tables of one public column or several, :mod:`~pufferfish.cli.show` for what they print,
:mod:`~pufferfish.cli.markov` for Markov chains, :mod:`~pufferfish.cli.common` for the shared
parsing and tables, :mod:`~pufferfish.cli.entry` for the start-up).
"""
