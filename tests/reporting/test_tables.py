"""Rendered tables keep order, round for reading and never print n/a cells as numbers."""

from __future__ import annotations

import pandas as pd
import pytest

from runner.reporting.tables import format_value, pivot_table, to_latex, to_markdown
from runner.results import Cell, StudyResult, cells_to_frame


def _cells() -> pd.DataFrame:
    r = StudyResult()
    r.add("t", "QA", "AUROC", 0.70149, ci=(0.6, 0.8))
    r.add("t", "QA", "AP", 0.3)
    r.add("t", "Combined", "AUROC", None)
    return r.cells_frame()


def test_format_value_rounds_and_brackets_the_interval():
    assert format_value(0.70149, 0.6, 0.8) == "0.701 [0.600, 0.800]"
    assert format_value(None) == "n/a"


def test_pivot_keeps_first_appearance_order_and_marks_missing_cells_empty():
    frame = pivot_table(_cells(), "t")
    assert list(frame.index) == ["QA", "Combined"]
    assert list(frame.columns) == ["AUROC", "AP"]
    assert frame.loc["Combined", "AUROC"] == "n/a"
    assert frame.loc["Combined", "AP"] == ""


def test_markdown_and_latex_contain_every_cell():
    frame = pivot_table(_cells(), "t")
    md = to_markdown(frame, "Title")
    assert md.startswith("**Title**") and "0.701 [0.600, 0.800]" in md
    assert r"\toprule" in to_latex(frame)


def test_a_cell_is_written_once_and_never_nan():
    with pytest.raises(ValueError, match="finite"):
        Cell("t", "r", "c", float("nan"))
    with pytest.raises(ValueError, match="duplicate"):
        cells_to_frame([Cell("t", "r", "c", 1.0), Cell("t", "r", "c", 2.0)])


def test_whole_number_columns_print_as_integers_and_fractions_keep_decimals():
    r = StudyResult()
    r.add("t", "a", "count", 6.0)
    r.add("t", "b", "count", 12.0)
    r.add("t", "a", "precision", 1.0)
    r.add("t", "b", "precision", 0.5)
    r.add("t", "a", "f1", 1.0, ci=(1.0, 1.0))
    frame = pivot_table(r.cells_frame(), "t")
    assert frame["count"].tolist() == ["6", "12"]
    assert frame["precision"].tolist() == ["1.000", "0.500"]
    assert frame.loc["a", "f1"] == "1.000 [1.000, 1.000]"
    assert "| a | 6 | 1.000 |" in to_markdown(frame)
    assert "a & 6 & 1.000" in to_latex(frame)
