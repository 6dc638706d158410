"""Defaults the command line shows in its help, in a module that imports nothing (issue 45:
``pufferfish --help`` loads no numerical library). The modules that use them import them from
here, so each has one definition."""

from __future__ import annotations

#: Seconds each mechanism of a comparison may take (the optimal search, the mapping LP) before
#: its row says it did not finish (issue 33); ``--time-limit``.
TIME_LIMIT = 300.0

#: Utilities of a mapping: expected accuracy (maximised), the same keeping every value's share of
#: the released rows (``shares``, the default for labels: rare labels are not collapsed into
#: common ones), or expected absolute error (minimised).
UTILITIES = ("shares", "accuracy", "absolute")

#: The default utility of ``optimal-mapping``: ``shares`` for a categorical column (labels keep
#: their share of the released rows), ``absolute`` (mean absolute error) for a numeric one. The
#: CLI's help is written from these.
DEFAULT_UTILITY_LABELS, DEFAULT_UTILITY_NUMBERS = "shares", "absolute"
