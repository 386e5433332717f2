"""Tables (Markdown, CSV, LaTeX) and figures from long-format cells, and run outputs."""

from runner.reporting.claims_figures import claims_figures
from runner.reporting.console import print_summary
from runner.reporting.figures import cost_frontier, delta_bars, operating_curves, scope_bars
from runner.reporting.guarantee_figures import guarantee_figure, population_figure
from runner.reporting.hri_figures import metric_grid_figure, roc_pr_figures
from runner.reporting.logged_runs import TITLES_FILE, SkippedRun, read_cells, scan_logged_runs
from runner.reporting.manifest import RunInfo, git_state
from runner.reporting.operating_report_doc import documents
from runner.reporting.outputs import (
    write_figures,
    write_files_and_documents,
    write_outputs,
    write_parquet,
    write_tables,
)
from runner.reporting.reproduction import render_report
from runner.reporting.run_folders import RunFolder, publish, remove_abandoned
from runner.reporting.source_shift_figures import target_adaptation_curves

__all__ = [
    "TITLES_FILE",
    "RunFolder",
    "RunInfo",
    "SkippedRun",
    "claims_figures",
    "cost_frontier",
    "delta_bars",
    "documents",
    "git_state",
    "guarantee_figure",
    "metric_grid_figure",
    "operating_curves",
    "population_figure",
    "print_summary",
    "publish",
    "read_cells",
    "remove_abandoned",
    "render_report",
    "roc_pr_figures",
    "scan_logged_runs",
    "scope_bars",
    "target_adaptation_curves",
    "write_figures",
    "write_files_and_documents",
    "write_outputs",
    "write_parquet",
    "write_tables",
]
