"""Reports from run directories: every table, the figures and one self-contained HTML page.

``load_runs`` scores and merges run directories, ``build_report`` makes the tables,
:mod:`taskgate.lab.reporting.figures` draws the figures (the ``figures`` extra) and
:mod:`taskgate.lab.reporting.html` writes the page.
"""

from taskgate.lab.reporting.build import Report, build_report
from taskgate.lab.reporting.runs import RunSet, load_runs

__all__ = ["Report", "RunSet", "build_report", "load_runs"]
