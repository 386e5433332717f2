"""The operating report as documents: ``report.md`` and ``report.html`` with figures inline.

Why in `reporting`: the `operating_report` study computes cells and extras; turning them
into a document a team reads (a header naming the data and what could not be computed,
every table, the gates' cost, the figures, and last the recommendation a team lead acts
on) is rendering, like the tables and figures every study gets. Drawn after the tables and
figures exist, so the report links them.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from pathlib import Path

from runner.evaluation import NOT_COMPUTABLE, confidence_text
from runner.reporting.tables import pivot_table, to_markdown
from runner.results import StudyResult

TITLE = "Operating report"


def documents(result: StudyResult, out_dir: Path) -> dict[str, str]:
    """``report.md`` and ``report.html`` of an operating report's result."""
    markdown = render_markdown(result, out_dir, header(result))
    return {"report.md": markdown, "report.html": render_html(markdown, out_dir, TITLE)}


def header(result: StudyResult) -> list[str]:
    """The lines above the tables: the data, how scores were made, the cascade, and each
    source whose source-shift rows could not be computed, with why."""
    info = result.extra.get("data.json", {})
    lines = [
        f"# {TITLE}: {info.get('name')}",
        "",
        f"{info.get('rows')} labelled rows; sources {info.get('sources')}; tasks "
        f"{info.get('tasks')}; data fingerprint `{info.get('fingerprint')}`.",
        "Scores are out of fold (grouped CV: no context group on both sides of a fold).",
    ]
    cascade = result.runtime.get("cascade")
    if cascade:
        lines.append(
            f"Cascade `{cascade['gate']} -> {cascade['verifier']}`: the gate routes every "
            f"row; the verifier scores the gate's verify band "
            f"({100 * cascade['share_sent_to_verifier']:.1f} % of rows) and, at threshold "
            f"{cascade['threshold']:g}, sends a verified row to review or accepts it. "
            f"`{cascade['verifier']}` alone scores every row."
        )
    for source, why in sorted((info.get("not_computable") or {}).items()):
        lines.append(
            f"Source `{source}`: leave-source-out and target-label rows "
            f"{NOT_COMPUTABLE}: {why}; every other number is reported."
        )
    return lines


def render_markdown(result: StudyResult, out_dir: Path, header: Sequence[str]) -> str:
    """``report.md``: the header lines, every table, runtime and the figures (relative)."""
    cells = result.cells_frame()
    parts = [*header, ""]
    for table in dict.fromkeys(cells["table"]):
        if table.startswith("curve_") or table == "recommendation":
            continue
        parts += [to_markdown(pivot_table(cells, table), result.titles.get(table, table)), ""]
    timing = result.runtime.get("gates") or {}
    if timing:
        parts += ["**Cost: ms per example from raw text (median of timed runs)**", ""]
        parts += ["| gate | ms/example | rows timed |", "|---|---|---|"]
        for gate, t in timing.items():
            parts.append(f"| {gate} | {t['median_ms_per_example']:.3f} | {t['rows']} |")
        parts.append("")
    for png in sorted((out_dir / "figures").glob("*.png")):
        parts += [f"![{png.stem}](figures/{png.name})", ""]
    rec = result.extra.get("recommendation.json")
    if rec:
        parts += recommendation_section(rec)
    return "\n".join(parts)


def _num(x: float | None, pattern: str = "{:.3f}") -> str:
    return "–" if x is None else pattern.format(x)


def recommendation_section(rec: dict) -> list[str]:
    """The report's last section: the decision in prose, a table of the contract and the
    next budgets, and the `fit_gate` command in a code block."""
    rows, first = rec["rows"], rec["rows"][0]
    conf = confidence_text(rec["delta"])
    lines = ["## Recommendation", ""]
    lines.append(f"**Ship `{rec['ship']}`** at `{' '.join(rec['setting'])}`: {rec['why']}.")
    lines.append("")
    if not rec["feasible"]:
        lines.append(f"- **Not achievable:** {rec['infeasible']}.")
        best = ", ".join(
            f"`routing.{k}={v:g}`" if v is not None else f"`routing.{k}`: none"
            for k, v in rec["best_achievable"].items()
        )
        uses = "; the command below uses it" if rec["command_at_best_achievable"] else ""
        if best:
            lines.append(f"- Best achievable on these rows: {best}{uses}.")
    else:
        at = f"review at risk >= {_num(first['review_at'], '{:.6g}')}, accept at risk <= "
        at += _num(first["accept_at"], "{:.6g}")
        if rec["kind"] == "cascade":
            at += f", verifier accepts below {_num(first['verifier_threshold'], '{:.6g}')}"
        lines.append(f"- Thresholds (on the out-of-fold scores, as `fit_gate` sets them): {at}.")
        bounds = []
        if first["accepted_risk_guaranteed"] is not None:
            bounds.append(f"accepted risk <= {first['accepted_risk_guaranteed']:g}")
        if first["review_precision_guaranteed"] is not None:
            scope = " (the gate's review band)" if rec["kind"] == "cascade" else ""
            bounds.append(f"review precision >= {first['review_precision_guaranteed']:g}{scope}")
        if bounds:
            lines.append(
                f"- Guaranteed with probability {conf} for traffic like these rows: "
                f"{' and '.join(bounds)}."
            )
    controlled = rec["controlled"]
    if not (controlled["accept"] and controlled["review"]):
        side = " and ".join(
            s
            for s, on in (("accept", controlled["accept"]), ("review", controlled["review"]))
            if not on
        )
        ci = first["accepted_risk_ci_high"]
        seen = f" (accepted risk 95 % CI upper end {ci:.3f})" if ci is not None else ""
        lines.append(f"- The {side} side is a budget: no guarantee{seen}.")
        lines += [
            f"- {hint[0].upper()}{hint[1:]}." if hint.startswith("no ") else f"- For one: {hint}."
            for hint in rec["hints"]
        ]
    cascade = rec["kind"] == "cascade"
    verify = "left in verify" if cascade else "verify"
    sent_share = first.get("sent_share")
    sent = "" if sent_share is None else f"; {1000 * sent_share:.0f} sent to the verifier"
    lines.append(
        f"- Expected per 1,000 rows: {1000 * first['accept_share']:.0f} accepted, "
        f"{1000 * first['verify_share']:.0f} {verify}, {first['reviews_per_1000']:.0f} "
        f"human reviews{sent}."
    )
    sent_column = " sent to verifier |" if cascade else ""
    lines += ["", "| setting | accept | verify | review |" + sent_column + " accepted risk | "
              "review precision | gate CPU s / 1k | verifier CPU s / 1k | reviews / 1k |",
              "|---|---|---|---|" + "---|" * (6 if cascade else 5)]  # fmt: skip
    for row in rows:
        risk = _bound(row, "accepted_risk", "<=", controlled["accept"])
        precision = _bound(row, "review_precision", ">=", controlled["review"])
        sent_cell = f" {_num(row.get('sent_share'), '{:.1%}')} |" if cascade else ""
        lines.append(
            f"| {row['setting']} | {row['accept_share']:.1%} | {row['verify_share']:.1%} | "
            f"{row['review_share']:.1%} |{sent_cell} {risk} | {precision} | "
            f"{_num(row['gate_s_per_1000'], '{:.2f}')} | "
            f"{_num(row['verifier_s_per_1000'], '{:.2f}')} | {row['reviews_per_1000']:.0f} |"
        )
    lines += [
        "",
        "Accepted risk and review precision: the guaranteed bound where the rule is "
        "controlled and met, else the out-of-fold value (95 % CI upper end in brackets).",
        "",
    ]
    lines += ["To ship it:", "", "```", rec["command"], "```", ""]
    if rec.get("command_note"):
        lines += [f"Note: {rec['command_note']}.", ""]
    return lines


def _bound(row: dict, name: str, sign: str, controlled: bool) -> str:
    """One side's cell: the guaranteed bound, else the OOF value; "(target not met)" only
    on a controlled side of a row that does not fit (a budget side has no target)."""
    guaranteed = row.get(f"{name}_guaranteed")
    if guaranteed is not None:
        return f"{sign} {guaranteed:g} (OOF {_num(row.get(f'{name}_oof'))})"
    text = _num(row.get(f"{name}_oof"))
    high = row.get(f"{name}_ci_high")
    text += f" [{high:.3f}]" if high is not None else ""
    return f"{text} (target not met)" if controlled and not row["feasible"] else text


def render_html(markdown: str, out_dir: Path, title: str) -> str:
    """``report.html``: the Markdown rendered, figures embedded inline as data URIs."""
    from markdown_it import MarkdownIt

    def inline(match: re.Match) -> str:
        data = base64.b64encode((out_dir / match["path"]).read_bytes()).decode()
        return f"![{match['alt']}](data:image/png;base64,{data})"

    text = re.sub(r"!\[(?P<alt>[^\]]*)\]\((?P<path>figures/[^)]+\.png)\)", inline, markdown)
    body = MarkdownIt("commonmark").enable("table").render(text)
    style = (
        "body{font-family:sans-serif;max-width:60em;margin:2em auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
        "img{max-width:100%}"
        "pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f4f4f4;padding:.6em}"
    )
    return (
        f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{style}</style></head><body>\n{body}</body></html>\n"
    )
