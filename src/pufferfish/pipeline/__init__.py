"""From a table to a release: the request validated at the edge
(:mod:`~pufferfish.pipeline.request`), the calibration of one column
(:mod:`~pufferfish.pipeline.calibrate`) and of several (:mod:`~pufferfish.pipeline.joint`), the
release (:mod:`~pufferfish.pipeline.release`), the figures' numbers
(:mod:`~pufferfish.pipeline.figures`) and the HTML reports (:mod:`~pufferfish.pipeline.report`,
:mod:`~pufferfish.pipeline.joint_report`; :mod:`~pufferfish.pipeline.joint_result` is what a
joint calibration returns).
"""
