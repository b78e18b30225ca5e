"""Tools that build and measure the study rather than analyse it: the papermill pipeline that turns the
notebooks into the report (:mod:`lib.tools.pipeline`) and ``make bench`` (:mod:`lib.tools.bench`).

They sit apart from the domain modules so a reader looking for a formula, prompt or data path in ``lib``
does not have to step over build machinery.
"""
