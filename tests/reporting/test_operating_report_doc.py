"""The operating report's documents (`runner.reporting.operating_report_doc`).

``report.md`` reads top to bottom as a team's answer: which data, how the scores were
made, the cascade when there is one, each source that could not give a source-shift
number and why, every table (not the curves' raw points), the cost and the figures;
``report.html`` is the same with the figures inline, so it travels as one file.
"""

from __future__ import annotations

import base64

import numpy as np

from runner.reporting.operating_report_doc import documents, header, recommendation_section
from runner.results import StudyResult


def result() -> StudyResult:
    out = StudyResult(titles={"operating": "Operating points"})
    out.add("operating", "Combined / g", "AUROC", 0.75, (0.7, 0.8))
    out.add("curve_review", "g", "10", 0.5)
    out.runtime["gates"] = {"g": {"median_ms_per_example": 0.1234, "rows": 200}}
    out.extra["data.json"] = {
        "name": "team",
        "rows": 80,
        "sources": ["a", "b"],
        "tasks": ["QA"],
        "fingerprint": "abc",
        "not_computable": {"b": "one context group"},
    }
    return out


def test_the_header_names_the_data_and_each_source_that_could_not_be_computed():
    lines = header(result())
    assert lines[0] == "# Operating report: team"
    assert "80 labelled rows; sources ['a', 'b']" in lines[2]
    assert lines[-1].startswith("Source `b`: leave-source-out and target-label rows not computable")
    cascaded = result()
    cascaded.runtime["cascade"] = {
        "gate": "g",
        "verifier": "v",
        "share_sent_to_verifier": 0.25,
        "threshold": 0.5,
    }
    (cascade,) = [line for line in header(cascaded) if line.startswith("Cascade `g -> v`")]
    assert "25.0 % of rows" in cascade


def test_markdown_has_the_tables_and_cost_not_the_curve_points_and_html_inlines_figures(tmp_path):
    (tmp_path / "figures").mkdir()
    png = b"\x89PNG\r\n\x1a\n fake"
    (tmp_path / "figures" / "curves.png").write_bytes(png)
    docs = documents(result(), tmp_path)
    md, html = docs["report.md"], docs["report.html"]
    assert "Operating points" in md and "curve_review" not in md
    assert "| g | 0.123 | 200 |" in md
    assert "![curves](figures/curves.png)" in md
    assert base64.b64encode(png).decode() in html and "figures/curves.png" not in html
    assert html.startswith("<!doctype html>") and "<title>Operating report</title>" in html


def recommended(**contract) -> dict:
    """A recommendation on synthetic rows (risk ~ U(0, 1), P(y | risk) = risk)."""
    from runner.routing import RoutingConf
    from runner.routing.report.recommendation import Scored, recommend

    rng = np.random.default_rng(0)
    risk = rng.random(2000)
    y = (rng.random(2000) < risk).astype(int)
    gate = Scored("g", risk, 0.7, 0.1, {0.5: 0.3})
    return recommend(
        y, [gate], RoutingConf(**contract), review_budgets=[0.1], accept_budgets=[0.5],
        dataset_path="/d.jsonl",
    )  # fmt: skip


def table_row(section: list[str], setting: str) -> list[str]:
    line = next(x for x in section if x.startswith(f"| {setting} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_a_budget_side_is_never_labelled_target_not_met():
    rec = recommended(accept_rule="risk_controlled", max_accepted_risk=0.01)
    section = recommendation_section(rec)
    asked = table_row(section, "as asked (target not met)")
    assert asked[4].endswith("(target not met)")  # accepted risk: the controlled side
    assert "target not met" not in asked[5]  # review precision: a budget, no target


def test_the_guarantee_is_printed_with_the_probability_it_has():
    rec = recommended(accept_rule="risk_controlled", max_accepted_risk=0.3)
    assert rec["feasible"]
    text = "\n".join(recommendation_section({**rec, "delta": 1e-9}))
    assert "Guaranteed with probability 1 - 1e-09 for traffic like these rows" in text
