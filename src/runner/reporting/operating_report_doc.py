"""The operating report as documents: ``report.md`` and ``report.html`` with figures inline.

Why in `reporting`: the `operating_report` study computes cells and extras; turning them
into a document a team reads (a header naming the data and what could not be computed,
every table, the gates' cost, the figures) is rendering, like the tables and figures
every study gets. Drawn after the tables and figures exist, so the report links them.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from pathlib import Path

from runner.evaluation import NOT_COMPUTABLE
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
        if table.startswith("curve_"):
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
    return "\n".join(parts)


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
    )
    return (
        f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{style}</style></head><body>\n{body}</body></html>\n"
    )
