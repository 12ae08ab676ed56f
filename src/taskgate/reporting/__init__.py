"""Reports from run directories: every table, the figures and one self-contained HTML page.

``load_runs`` scores and merges run directories, ``build_report`` makes the tables,
:mod:`taskgate.reporting.figures` draws the figures (the ``figures`` extra) and
:mod:`taskgate.reporting.html` writes the page.
"""

from .build import Report, build_report
from .runs import RunSet, load_runs

__all__ = ["Report", "RunSet", "build_report", "load_runs"]
