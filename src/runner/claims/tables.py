"""The claim study's tables, each computed on one scope of claims (every claim, or without
meta-claims).

Why here: each table is a fixed layout of flag-task numbers (`runner.claims.flag_metrics`)
over the systems' per-claim labels; the study only says which tables a run reports. Every
function adds cells to a `StudyResult` in a fixed order, so equal inputs give equal cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from runner.claims.ensembles import and_rule, cascade_rule, union_rule, vote_rule
from runner.claims.flag_metrics import (
    MARK_COLUMN,
    decided_metrics,
    flag_metrics,
    safe_auroc,
    venn_regions,
)
from runner.claims.verifier_runs import JudgeRun, SpanRun
from runner.data import LABELS, is_flagged
from runner.evaluation import (
    average_precision,
    group_bootstrap,
    percentile_interval,
    standard_metrics,
)
from runner.results import StudyResult

System = tuple[str, np.ndarray, np.ndarray]
"""A system's table row, its per-claim labels and its per-claim abstentions."""


@dataclass
class Scope:
    """The claims one family of tables is computed on, and how its tables are titled.

    ``suffix`` is appended to every table id (``""`` or ``"_no_meta"``); ``keep`` marks the
    claims in scope; ``note`` (a sampling note) is appended to every title.
    """

    suffix: str
    keep: np.ndarray
    positive: np.ndarray
    claims: pd.DataFrame
    labels: dict[str, np.ndarray]
    abstained: dict[str, np.ndarray]
    titles: dict[str, str]
    note: str = ""

    def table(self, result: StudyResult, base: str) -> str:
        """The table id in this scope, with its title registered in ``result``."""
        table = base + self.suffix
        title = self.titles[base] + (" (meta-claims set aside)" if self.suffix else "")
        result.titles[table] = title + (f" [{self.note}]" if self.note else "")
        return table

    @property
    def pos(self) -> np.ndarray:
        return self.positive[self.keep]


@dataclass(frozen=True)
class Runs:
    """What the verifiers produced: S1's run (None without one), each judge's run, the claim
    of each judged unit, and the run's runtime record (the cost table reads it)."""

    s1: SpanRun | None
    judges: dict[str, JudgeRun]
    unit_claim: np.ndarray
    runtime: dict[str, Any]


def scope_tables(
    result: StudyResult,
    ctx: Scope,
    meta: np.ndarray,
    systems: list[System],
    runs: Runs,
    combos: list[Any],
    boot: Any,
    timing_in_tables: bool,
) -> None:
    """Every table of one scope, in the report's order: data, systems, S1's, the judges'
    overlaps and abstentions, combinations, categories and cost."""
    judges = list(runs.judges)
    data_table(result, ctx, meta)
    systems_table(result, ctx, systems)
    if runs.s1 is not None:
        s1_tables(result, ctx, runs.s1, boot)
    if judges:
        venn_tables(result, ctx, judges)
        abstention_table(result, ctx, runs.judges, runs.unit_claim)
    if combos:
        combination_table(result, ctx, combos)
    category_table(result, ctx, systems, judges)
    if judges:
        cost_table(result, ctx, runs.s1, runs.judges, runs.runtime, timing_in_tables)


def setup_record(
    dataset: str | None,
    claim_ids: list[str],
    params: Any,
    limit_used: Any,
    available: int,
    note: str,
    seed: int,
    detector: Any,
    judge_runs: dict[str, JudgeRun],
    meta: np.ndarray,
    combos: list[Any],
) -> dict[str, Any]:
    """``claims_setup.json``: which claims were verified (and how they were sampled), by
    which detector and judges, which were meta-claims, and the combinations scored."""
    return {
        "dataset": dataset,
        "claims": claim_ids,
        "limit": params.limit,
        "limit_used": limit_used,
        "claims_available": available,
        "sampling": note or "none (every claim judged)",
        "limit_strategy": params.limit_strategy,
        "seed": seed,
        "span_detector": detector.describe() if detector is not None else None,
        "judges": {j: jr.describe for j, jr in judge_runs.items()},
        "meta_claims": [c for c, m in zip(claim_ids, meta, strict=True) if m],
        "combinations": [c.name for c in combos],
    }


def system_rows(s1: SpanRun | None, judge_runs: dict[str, JudgeRun]) -> list[System]:
    """S1, then per judge: S2 alone, S3 AND, S4 vote and S5 cascade with S1.

    The cascade abstains only where S1 flags the claim and the judge abstained (a claim S1
    leaves green never reaches the judge).
    """
    systems: list[System] = []
    if s1 is not None:
        systems.append((s1.row, s1.labels, np.zeros(len(s1.labels), dtype=bool)))
    for j, jr in judge_runs.items():
        systems.append((f"S2 LLM judge / {j}", jr.labels, jr.abstained))
        if s1 is not None:
            s1l = s1.labels
            systems += [
                (f"S3 AND / {j}", and_rule(s1l, jr.labels), jr.abstained),
                (f"S4 vote / {j}", vote_rule(s1l, jr.labels), jr.abstained),
                (f"S5 cascade / {j}", cascade_rule(s1l, jr.labels), jr.abstained & is_flagged(s1l)),
            ]
    return systems


def data_table(result: StudyResult, ctx: Scope, meta: np.ndarray) -> None:
    """Claims in scope, per label, flag-task positives and meta-claims."""
    t = ctx.table(result, "data")
    lab = ctx.claims["label"].to_numpy()[ctx.keep]
    result.add(t, "claims", "count", float(ctx.keep.sum()))
    for label in LABELS:
        result.add(t, label, "count", float((lab == label).sum()))
    result.add(t, "flag-task positives (yellow + red)", "count", float(ctx.pos.sum()))
    result.add(t, "meta-claims", "count", float(meta[ctx.keep].sum()))


def systems_table(result: StudyResult, ctx: Scope, systems: list[System]) -> None:
    """The flag task per system, with its abstentions and its numbers on decided claims."""
    t = ctx.table(result, "systems")
    for row, lab, abst in systems:
        flagged = is_flagged(lab)[ctx.keep]
        for column, value in flag_metrics(flagged, ctx.pos).items():
            result.add(t, row, column, value)
        ab = abst[ctx.keep]
        result.add(t, row, "abstentions", float(ab.sum()))
        result.add(t, row, "abstentions on positives", float((ab & ctx.pos).sum()))
        for column, value in decided_metrics(flagged, ctx.pos, ab).items():
            result.add(t, row, column, value)


def s1_tables(result: StudyResult, ctx: Scope, s1: SpanRun, boot: Any = None) -> None:
    """The span detector's threshold sweep and the AUROC / AP of its claim scores.

    With bootstrap settings (`boot`: ``n_resamples``, ``seed``, ``level``), each AUROC / AP
    cell carries a claim-bootstrap percentile interval (`runner.evaluation.group_bootstrap`,
    one claim = one resampling unit; both scores on the same resamples)."""
    t = ctx.table(result, "s1_sweep")
    threshold = s1.threshold
    for th in s1.sweep:
        row = f"{th:g}" + (" (used)" if th == threshold else "")
        flagged = (s1.shares[th] > 0)[ctx.keep]
        for column, value in flag_metrics(flagged, ctx.pos).items():
            result.add(t, row, column, value)
    t = ctx.table(result, "s1_auroc")
    scores = {
        "max token prob": s1.max_prob[ctx.keep],
        f"share > {threshold:g}": s1.shares[threshold][ctx.keep],
    }
    ci = _claim_intervals(ctx, scores, boot)
    for name, score in scores.items():
        result.add(
            t, s1.row, f"AUROC ({name})", safe_auroc(ctx.pos, score), ci.get(("auroc", name))
        )
    for name, score in scores.items():
        two = bool(ctx.pos.any() and (~ctx.pos).any())
        ap = average_precision(ctx.pos.astype(np.int64), score) if two else None
        result.add(t, s1.row, f"AP ({name})", ap, ci.get(("ap", name)))
    result.add(t, s1.row, "positives", float(ctx.pos.sum()))
    result.add(t, s1.row, "negatives", float((~ctx.pos).sum()))


def _claim_intervals(ctx: Scope, scores: dict[str, np.ndarray], boot: Any) -> dict:
    """(metric, score name) -> claim-bootstrap interval; empty without settings or with one
    class in scope (no AUROC to resample)."""
    y = ctx.pos.astype(np.int64)
    if boot is None or y.min(initial=1) == y.max(initial=0):
        return {}
    every = standard_metrics()
    res = group_bootstrap(
        y,
        scores,
        ctx.claims["claim_id"].to_numpy()[ctx.keep],
        {"auroc": every["auroc"], "ap": every["ap"]},
        n_resamples=boot.n_resamples,
        seed=boot.seed,
        level=boot.level,
    )
    return {
        (metric, name): percentile_interval(res.samples[("pooled", metric, name)], boot.level)
        for metric in ("auroc", "ap")
        for name in scores
    }


def venn_tables(result: StudyResult, ctx: Scope, judges: list[str]) -> None:
    """Overlap of the judges' true alarms and of their false alarms (claims per region)."""
    for base, want in (("venn_catches", True), ("venn_false_alarms", False)):
        t = ctx.table(result, base)
        target = ctx.pos if want else ~ctx.pos  # positives for catches, negatives otherwise
        sets = {j: is_flagged(ctx.labels[j])[ctx.keep][target] for j in judges}
        for j in judges:
            result.add(t, f"total: {j}", "claims", float(sets[j].sum()))
        for region, count in venn_regions(sets):
            result.add(t, region, "claims", float(count))
        for j in judges:
            abst = ctx.abstained[j][ctx.keep][target]
            result.add(t, f"abstentions: {j}", "claims", float(abst.sum()))
        for j in judges:
            abst = ctx.abstained[j][ctx.keep][target]
            result.add(t, f"on decided claims: {j}", "claims", float((sets[j] & ~abst).sum()))
        for j in judges:
            every = ctx.abstained[j][ctx.keep]
            share = float((~every).sum()) / len(every) if len(every) else None
            result.add(t, f"decided share: {j}", "claims", share)
        result.add(t, "claims in scope", "claims", float(target.sum()))


def combination_table(result: StudyResult, ctx: Scope, combos: list[Any]) -> None:
    """Every cross-family combination, ranked by F1 (then fewer false alarms, then name)."""
    t = ctx.table(result, "combinations")
    rows = []
    for combo in combos:
        lab = combo.apply(ctx.labels)
        metrics = flag_metrics(is_flagged(lab)[ctx.keep], ctx.pos)
        ab = np.zeros(int(ctx.keep.sum()), dtype=bool)
        for member in combo.members:
            ab |= ctx.abstained[member][ctx.keep]
        decided = decided_metrics(is_flagged(lab)[ctx.keep], ctx.pos, ab)
        rows.append((combo.name, metrics, float(ab.sum()), decided))
    rows.sort(key=lambda r: (-(r[1]["f1"] or 0.0), r[1]["false_alarms"], r[0]))
    for rank, (name, metrics, ab, decided) in enumerate(rows, start=1):
        result.add(t, name, "rank", float(rank))
        result.add(t, name, "errors caught", metrics["true_alarms"])
        result.add(t, name, "false alarms", metrics["false_alarms"])
        result.add(t, name, "precision", metrics["precision"])
        result.add(t, name, "recall", metrics["recall"])
        result.add(t, name, "f1", metrics["f1"])
        result.add(t, name, "abstentions", ab)
        for column, value in decided.items():
            result.add(t, name, column, value)


def category_table(
    result: StudyResult, ctx: Scope, systems: list[System], judges: list[str]
) -> None:
    """Catch rate per error category (only where the data has categories)."""
    category = ctx.claims["category"].to_numpy()
    in_scope = ctx.keep & ctx.positive & (category != "")
    if not in_scope.any():
        return
    t = ctx.table(result, "categories")
    any_caught = np.zeros(len(category), dtype=bool)
    for _, lab, _ in systems:
        any_caught |= is_flagged(lab)
    for cat in sorted(set(category[in_scope])):
        mask = in_scope & (category == cat)
        n = float(mask.sum())
        result.add(t, cat, "claims", n)
        result.add(t, cat, "caught by any system", float((any_caught & mask).sum()))
        for row, lab, _ in systems:
            result.add(t, cat, f"catch rate / {row}", float((is_flagged(lab) & mask).sum()) / n)
        for j in judges:
            result.add(t, cat, f"abstentions / {j}", float((ctx.abstained[j] & mask).sum()))


def cost_table(
    result: StudyResult,
    ctx: Scope,
    s1: SpanRun | None,
    judge_runs: dict[str, JudgeRun],
    runtime: dict[str, Any],
    timing_in_tables: bool,
) -> None:
    """LLM calls per claim, full judging vs the cascade; measured seconds go to ``runtime``.

    Seconds enter the table only with ``timing_in_tables`` (cells then vary between runs).
    """
    t = ctx.table(result, "cost")
    n = float(ctx.keep.sum())
    s1_flagged = is_flagged(s1.labels)[ctx.keep] if s1 is not None else None
    s1_seconds = runtime.get("span_detector", {}).get("seconds_per_claim", 0.0)
    timing: dict[str, Any] = runtime.setdefault(f"cost{ctx.suffix}", {})
    for j, jr in judge_runs.items():
        rows = [(f"S2 full judging / {j}", np.ones(int(n), dtype=bool), 0.0)]
        if s1_flagged is not None:
            rows.append((f"S5 cascade / {j}", s1_flagged, s1_seconds))
        for row, sent, screen_seconds in rows:
            calls = float(jr.calls[ctx.keep][sent].sum())
            seconds = float(jr.seconds[ctx.keep][sent].sum()) / n + screen_seconds if n else 0.0
            result.add(t, row, "claims sent to the judge", float(sent.sum()))
            result.add(t, row, "LLM calls", calls)
            result.add(t, row, "LLM calls per claim", calls / n if n else None)
            result.add(t, row, "abstentions", float((jr.abstained[ctx.keep] & sent).sum()))
            timing[row] = {"seconds_per_claim": round(seconds, 4)}
            if timing_in_tables:
                result.add(t, row, "seconds per claim (measured)", seconds)


def abstention_table(
    result: StudyResult, ctx: Scope, judge_runs: dict[str, JudgeRun], unit_claim: np.ndarray
) -> None:
    """Per judge: abstentions, repairs, truncated prompts and what the answers said."""
    t = ctx.table(result, "abstentions")
    unit_keep = ctx.keep[unit_claim]
    for j, jr in judge_runs.items():
        recs = [r for r, k in zip(jr.unit_records, unit_keep, strict=True) if k]
        result.add(t, j, "claims", float(ctx.keep.sum()))
        result.add(t, j, "abstained claims", float(jr.abstained[ctx.keep].sum()))
        result.add(t, j, "units judged", float(len(recs)))
        result.add(t, j, "abstained units", float(sum(r["abstained"] for r in recs)))
        result.add(
            t,
            j,
            "first answers without a valid verdict",
            float(sum(len(r["errors"]) > 0 for r in recs)),
        )
        result.add(t, j, "verdicts read after repair", float(sum(r["repaired"] for r in recs)))
        result.add(t, j, "repair calls", float(sum(r["calls"] - 1 for r in recs)))
        result.add(t, j, "truncated prompts", float(sum(r["truncated"] for r in recs)))
        for label in LABELS:
            said = sum(r["parsed_label"] == label for r in recs)
            result.add(t, j, f"said {label}", float(said))


def meta_precision_table(
    result: StudyResult,
    title: str,
    positive: np.ndarray,
    meta: np.ndarray,
    judge_runs: dict[str, JudgeRun],
) -> None:
    """Each judge's (and the judges' union's) precision with and without meta-claims."""
    t = "meta_precision"
    result.titles[t] = title
    judges = list(judge_runs)
    rows = [(f"S2 LLM judge / {j}", jr.labels, jr.abstained) for j, jr in judge_runs.items()]
    if len(judges) > 1:
        union = union_rule([judge_runs[j].labels for j in judges])
        ab = np.zeros(len(positive), dtype=bool)
        for j in judges:
            ab |= judge_runs[j].abstained
        rows.append((f"union({', '.join(judges)})", union, ab))
    for row, lab, ab in rows:
        flagged = is_flagged(lab)
        every = flag_metrics(flagged, positive)
        without = flag_metrics(flagged[~meta], positive[~meta])
        result.add(t, row, "precision (every claim)", every["precision"])
        result.add(t, row, "precision (without meta-claims)", without["precision"])
        result.add(t, row, "false alarms", every["false_alarms"])
        result.add(t, row, "false alarms on meta-claims", float((flagged & ~positive & meta).sum()))
        result.add(t, row, "meta-claims", float(meta.sum()))
        result.add(t, row, "abstentions", float(ab.sum()))
        share = decided_metrics(flagged, positive, ab)
        result.add(t, row, "decided share", share["decided share"])
        result.add(t, row, MARK_COLUMN, share[MARK_COLUMN])
