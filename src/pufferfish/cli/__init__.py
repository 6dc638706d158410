"""The ``pufferfish`` command line: a thin layer over the public API (:mod:`~pufferfish.cli.app`
for tables, :mod:`~pufferfish.cli.joint` for several columns, :mod:`~pufferfish.cli.markov` for
Markov chains, :mod:`~pufferfish.cli.common` for the shared printing,
:mod:`~pufferfish.cli.entry` for the start-up).
"""
