"""The reproduction report joins ours with the paper's cell by cell, without recomputing."""

from __future__ import annotations

import pandas as pd
import pytest

from runner.reporting.reproduction import LoggedRun, compare, render_report

PUBLISHED = pd.DataFrame(
    {
        "table": ["t3", "t3", "t8a"],
        "row": ["QA", "Combined", "DROP"],
        "column": ["AUROC", "AUROC", "AUROC"],
        "value": [0.70, 0.80, 0.51],
        "ci_low": [None, None, 0.47],
        "ci_high": [None, None, 0.54],
    }
)
OURS = pd.DataFrame(
    {
        "table": ["t3", "t3", "t8a"],
        "row": ["QA", "Combined", "RAGTruth"],
        "column": ["AUROC", "AUROC", "AUROC"],
        "value": [0.72, 0.79, 0.6],
        "ci_low": [None, None, None],
        "ci_high": [None, None, None],
    }
)


def test_delta_is_ours_minus_paper_and_missing_cells_are_marked():
    joined = compare(OURS, PUBLISHED)
    by_row = joined.set_index("row")
    assert by_row.loc["QA", "delta"] == pytest.approx(0.02)
    assert by_row.loc["Combined", "delta"] == pytest.approx(-0.01)
    assert by_row.loc["DROP", "status"] == "not in our run"


def test_report_lists_every_published_cell_of_the_tables_we_ran(tmp_path):
    run = LoggedRun("rq2", "rq2_grouped_cv", tmp_path, OURS, {"git": {"commit": "abc"}})
    text = render_report("ragscope", [run], PUBLISHED)
    assert "| t3 | QA | AUROC | 0.720 | 0.700 | +0.020 |" in text
    assert "| t8a | DROP | AUROC | not in our run | 0.510 [0.470, 0.540] |  |" in text
