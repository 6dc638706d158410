"""From a table to a release, one path for one public column or several (issue 31): the request
validated at the edge (:mod:`~pufferfish.pipeline.request`), the calibration
(:mod:`~pufferfish.pipeline.calibrate`: the priors of one column or the joint priors of several
estimated by :mod:`~pufferfish.tables.estimate`, then compared and checked), what it returns
(:mod:`~pufferfish.pipeline.results`: one calibration type, one release type, one JSON report), the
draws checked as the samplers make them (:mod:`~pufferfish.pipeline.draws`), the release
(:mod:`~pufferfish.pipeline.release`), the figures' numbers (:mod:`~pufferfish.pipeline.figures`)
and the HTML report of any number of columns (:mod:`~pufferfish.pipeline.report`, its sections,
on the page of :mod:`~pufferfish.pipeline.page` with the figures of
:mod:`~pufferfish.pipeline.plots`).
"""
