"""What a run prints when it finishes: each table, and where everything went."""

from __future__ import annotations

from typing import Any

from runner.reporting.outputs import is_figure_data
from runner.reporting.tables import pivot_table, to_markdown


def print_summary(outcome: Any) -> None:
    """Print every table of the run as Markdown, then the output and MLflow locations."""
    cells = outcome.result.cells_frame()
    for table in dict.fromkeys(cells["table"]):
        if is_figure_data(table):
            continue
        title = outcome.result.titles.get(table, table)
        print(to_markdown(pivot_table(cells, table), title))
    print(f"outputs: {outcome.output_dir}")
    if outcome.mlflow_run_id:
        print(f"mlflow run: {outcome.mlflow_run_id} (make ui)")
