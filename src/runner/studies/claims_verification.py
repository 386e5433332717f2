"""Claim verification (seed 004): a span detector, LLM judges and their combinations.

Every configured verifier judges exactly the same claims against the same passages:

- S1 span detector (``cfg.span_detector``, `runner.claims.span_detector.SpanDetector`);
- S2 one run per configured LLM judge (``cfg.judges.<name>``, `runner.claims.judges`);
- S3 AND, S4 vote, S5 cascade of S1 and each judge (`runner.claims.ensembles`);
- cross-family combinations: each judge alone, and union / k-of-n / all-agree over every
  subset of two or more judges, each with and without S1.

The flag task: a claim is flagged when a system says yellow or red; positives are the
yellow + red claims. Abstentions (no valid verdict after the one repair attempt) are
yellow, so they are flags; every table counts them per judge. The cascade is computed from
the full S2 run (greedy decoding makes a judge's verdict on a claim the same whichever
system asks), and its cost counts only the calls for the claims S1 flags.

Every table is also reported with meta-claims set aside (suffix ``_no_meta``): claims
worded as statements about the sources (`runner.claims.meta`).

Tables (ids): ``data``, ``systems``, ``s1_sweep``, ``s1_auroc``, ``venn_catches``,
``venn_false_alarms``, ``combinations``, ``categories`` (only where the data has error
categories), ``cost``, ``abstentions`` (each also ``<id>_no_meta``) and
``meta_precision``. Cells depend only on config, code and data: measured seconds go to
``runtime["claims_verification"]`` (and into the ``cost`` table only with
``timing_in_tables: true``, which makes cells vary run to run).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations as subsets
from typing import Any, Optional

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig

from runner.claims.ensembles import (
    and_rule,
    cascade_rule,
    enumerate_combinations,
    union_rule,
    vote_rule,
)
from runner.claims.judges.cache import AnswerCache
from runner.claims.meta import MetaClaimDetector
from runner.data.claim_labels import GREEN, LABELS, SEVERITY, is_flagged
from runner.errors import ConfigError, DataError
from runner.evaluation.metrics import auroc
from runner.paths import artifacts_dir
from runner.results import StudyResult

# OmegaConf reads the Params annotations at runtime and does not understand `X | None`.
# ruff: noqa: UP045

log = logging.getLogger(__name__)

PAPER = "claims"
LIMIT_STRATEGIES = ("stratified", "head")
SUBSETS = (("", "every claim"), ("_no_meta", "meta-claims set aside"))

TITLES = {
    "data": "Claims judged: counts by label and meta-claims",
    "systems": "Flag task per system and judge (flagged = yellow or red)",
    "s1_sweep": "S1 span detector: claims flagged at each token threshold",
    "s1_auroc": "S1 span detector: AUROC of the claim score",
    "venn_catches": "Overlap of the judges' true alarms (claims per Venn region)",
    "venn_false_alarms": "Overlap of the judges' false alarms (claims per Venn region)",
    "combinations": "Combinations across judge families, ranked by F1",
    "categories": "Catch rate per error category (yellow/red claims of each category)",
    "cost": "LLM calls per claim: full judging vs cascade",
    "abstentions": "Judge abstentions (no valid verdict after one repair; routed to yellow)",
    "meta_precision": "Precision with every claim and with meta-claims set aside",
}


@dataclass
class Params:
    """Claim-verification parameters.

    Attributes
    ----------
    limit : int, None or "auto"
        Claims judged. ``auto`` (the default): a quick sample of `QUICK_LIMIT` claims from
        the shipped public sets (WiCE, Factcheck-Bench), every claim of any other file (a
        user's claim file is read whole). An integer samples that many from any data set;
        None judges every claim. Any sampling is logged and named in every table title.
    limit_strategy : str
        ``stratified``: a seeded sample (``cfg.seed``) keeping each label's share;
        ``head``: the first claims in file order.
    meta_patterns : list of str or None
        Meta-claim patterns replacing the defaults (`runner.claims.meta.DEFAULT_PATTERNS`).
    meta_extra_patterns : list of str
        Patterns added to the defaults.
    timing_in_tables : bool
        Also put measured seconds per claim into the ``cost`` table (cells then vary
        between runs; they are always in ``runtime``).
    keep_outputs : bool
        Write every judge answer, reasoning and parse error to ``claims_verdicts.json``.
    answer_cache : bool
        Keep judge answers in a disk cache keyed by model hash, prompt text and decoding
        settings (`runner.claims.judges.cache`), so a re-run that changes only how verdicts
        are combined re-uses them. False: answers are still shared between the judges of
        one run (in memory), never read from or written to disk.
    cache_dir : str or None
        Folder of the disk cache; None = ``<artifacts>/cache/judges``.
    """

    limit: Any = "auto"
    limit_strategy: str = "stratified"
    meta_patterns: Optional[list[str]] = None
    meta_extra_patterns: list[str] = field(default_factory=list)
    timing_in_tables: bool = False
    keep_outputs: bool = True
    answer_cache: bool = True
    cache_dir: Optional[str] = None

    def __post_init__(self) -> None:
        limit = self.limit
        if limit == "auto" or limit is None:
            return
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(
                f"study.params.limit must be a positive integer, null or auto, got {limit!r}"
            )


QUICK_LIMIT = 6
"""Claims of a shipped public set judged under ``limit: auto`` (a quick default run)."""

SHIPPED_LOADERS = (
    "runner.data.claims.load_wice",
    "runner.data.claims.load_wice_oracle",
    "runner.data.claims.load_factcheck_stance",
    "runner.data.factbench.load_factbench",
)
"""Dataset loaders of the public claim sets that ``limit: auto`` samples (by ``_target_``)."""


def resolve_limit(limit: Any, dataset_target: str | None) -> int | None:
    """The number of claims to judge: ``auto`` -> `QUICK_LIMIT` for a shipped set, else all."""
    if limit == "auto":
        return QUICK_LIMIT if dataset_target in SHIPPED_LOADERS else None
    return limit


# --------------------------------------------------------------------------- selection


def select_claims(
    claims: pd.DataFrame, limit: int | None, strategy: str, seed: int
) -> pd.DataFrame:
    """The claims a run judges, in data order.

    Parameters
    ----------
    claims : DataFrame
        One row per claim (``claim_id``, ``label``).
    limit : int or None
        Maximum number of claims; None keeps all.
    strategy : str
        ``stratified`` (seeded, each label's share kept by largest remainder, at least one
        claim per label present when ``limit`` allows) or ``head``.
    seed : int
        Seed of the stratified sample.

    Returns
    -------
    DataFrame
        The selected rows of ``claims``, in their original order.
    """
    if strategy not in LIMIT_STRATEGIES:
        raise ConfigError(f"limit_strategy must be one of {LIMIT_STRATEGIES}, got {strategy!r}")
    if limit is None or limit >= len(claims):
        return claims
    if limit < 1:
        raise ConfigError(f"limit must be a positive integer or null, got {limit}")
    if strategy == "head":
        return claims.iloc[:limit]
    counts = claims["label"].value_counts()
    present = [lab for lab in LABELS if lab in counts.index]
    quota = {lab: limit * counts[lab] / len(claims) for lab in present}
    take = {lab: int(np.floor(q)) for lab, q in quota.items()}
    if limit >= len(present):
        for lab in present:
            take[lab] = max(take[lab], 1)
    while sum(take.values()) > limit:
        lab = max(present, key=lambda x: (take[x] - quota[x], SEVERITY[x]))
        take[lab] -= 1
    while sum(take.values()) < limit:
        lab = max(present, key=lambda x: (quota[x] - take[x], -SEVERITY[x]))
        take[lab] += 1
    rng = np.random.default_rng(seed)
    keep: list[int] = []
    for lab in present:
        positions = np.flatnonzero(claims["label"].to_numpy() == lab)
        keep.extend(rng.choice(positions, size=min(take[lab], len(positions)), replace=False))
    return claims.iloc[sorted(int(k) for k in keep)]


# --------------------------------------------------------------------------- verdicts


@dataclass
class JudgeRun:
    """One judge's verdicts, per unit and combined per claim."""

    name: str
    describe: dict[str, Any]
    labels: np.ndarray  # per claim
    abstained: np.ndarray  # per claim, bool
    calls: np.ndarray  # per claim, int
    seconds: np.ndarray  # per claim, float
    unit_records: list[dict[str, Any]]


def combine_units(labels: Sequence[str], abstained: Sequence[bool]) -> tuple[str, bool]:
    """One claim's verdict from its units' verdicts (WiCE's max over chunks).

    The most supported *valid* verdict wins. An abstained unit counts as yellow, so it
    never makes a claim green; the claim is marked abstained when any unit abstained and
    no valid unit said green (the abstention then bears on the label).

    Parameters
    ----------
    labels : sequence of str
        Unit labels (yellow where the unit abstained).
    abstained : sequence of bool

    Returns
    -------
    (label, abstained)
    """
    codes = [SEVERITY[lab] for lab in labels]
    if any(c == 0 and not a for c, a in zip(codes, abstained, strict=True)):
        return GREEN, False
    best = min(codes)
    return LABELS[best], bool(any(abstained))


def judge_units(
    judges: dict[str, Any],
    units: pd.DataFrame,
    progress: bool,
    cache: AnswerCache | None = None,
) -> dict[str, list[Any]]:
    """Every judge's verdicts on every unit, the judges taking turns claim by claim.

    Turns: all judges judge a chunk of units (one unit, or ``batch_size`` units for a
    batching judge) before the next chunk. Judges of one model and one first prompt then
    find each first answer in ``cache`` the moment it exists, and a repair finds the
    model's keys/values for the prompt and first answer still kept (see
    `runner.claims.judges.TransformersJudge`), so neither is computed twice.
    """
    items = list(zip(units["question"], units["claim"], units["passages"], strict=True))
    chunk = max([int(getattr(j, "batch_size", 1)) for j in judges.values()] + [1])
    out: dict[str, list[Any]] = {name: [] for name in judges}
    bar = None
    if progress and judges:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(items), desc=f"judges {', '.join(judges)}", unit="claim")
    try:
        for start in range(0, len(items), chunk):
            part = items[start : start + chunk]
            for name, judge in judges.items():
                out[name].extend(judge.judge_many(part, cache=cache))
            if bar is not None:
                bar.update(len(part))
    finally:
        if bar is not None:
            bar.close()
    return out


def run_judge(
    name: str,
    judge: Any,
    units: pd.DataFrame,
    claim_ids: list[str],
    verdicts: list[Any],
) -> JudgeRun:
    """One judge's unit verdicts, combined per claim."""
    by_claim: dict[str, list[Any]] = {c: [] for c in claim_ids}
    records = []
    unit_ids = units["unit_id"].tolist()
    for unit_id, claim_id, verdict in zip(unit_ids, units["claim_id"], verdicts, strict=True):
        by_claim[claim_id].append(verdict)
        record = verdict.to_dict()
        record.pop("seconds")
        records.append({"unit_id": unit_id, "claim_id": claim_id, **record})
    labels, abst, calls, secs = [], [], [], []
    for claim_id in claim_ids:
        vs = by_claim[claim_id]
        label, ab = combine_units([v.label for v in vs], [v.abstained for v in vs])
        labels.append(label)
        abst.append(ab)
        calls.append(sum(v.calls for v in vs))
        secs.append(sum(v.seconds for v in vs))
    return JudgeRun(
        name,
        judge.describe(),
        np.array(labels, dtype=object),
        np.array(abst, dtype=bool),
        np.array(calls, dtype=np.int64),
        np.array(secs, dtype=np.float64),
        records,
    )


# --------------------------------------------------------------------------- metrics


def flag_metrics(flagged: np.ndarray, positive: np.ndarray) -> dict[str, float | None]:
    """Flags, true / false alarms, precision, recall and F1 of the flag task.

    Precision is None (n/a) without flags, recall None without positives; F1 is
    2TP / (2TP + FP + FN), None when there are neither flags nor positives.
    """
    flagged = np.asarray(flagged, dtype=bool)
    positive = np.asarray(positive, dtype=bool)
    tp = int((flagged & positive).sum())
    fp = int((flagged & ~positive).sum())
    fn = int((~flagged & positive).sum())
    denominator = 2 * tp + fp + fn
    return {
        "flags": float(tp + fp),
        "true_alarms": float(tp),
        "false_alarms": float(fp),
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
        "f1": 2 * tp / denominator if denominator else None,
    }


MOSTLY_ABSTAINED = 0.5
"""A system whose abstained share of claims exceeds this is marked in tables and figures."""

MARK_COLUMN = "mostly abstained (> 50 %)"


def decided_metrics(
    flagged: np.ndarray, positive: np.ndarray, abstained: np.ndarray
) -> dict[str, float | None]:
    """Decided share and the flag metrics on the claims a system decided.

    An abstention is routed to yellow, so it counts as a flag in `flag_metrics`; these
    columns show what the system scores where it actually gave a verdict, and whether it
    abstained on more than half of the claims (`MOSTLY_ABSTAINED`; 1 = marked).
    """
    abstained = np.asarray(abstained, dtype=bool)
    n = len(abstained)
    decided = ~abstained
    metrics = flag_metrics(np.asarray(flagged)[decided], np.asarray(positive)[decided])
    share = float(decided.sum()) / n if n else None
    return {
        "decided share": share,
        "precision (decided)": metrics["precision"],
        "recall (decided)": metrics["recall"],
        "f1 (decided)": metrics["f1"],
        MARK_COLUMN: float(share is not None and 1.0 - share > MOSTLY_ABSTAINED),
    }


def sampling_note(judged: int, available: int, strategy: str, seed: int) -> str:
    """``""`` when every claim is judged, else what was sampled (for titles and the log)."""
    if judged >= available:
        return ""
    how = f"stratified by label, seed {seed}" if strategy == "stratified" else "first in file"
    return f"sample of {judged} of {available} claims ({how})"


def _safe_auroc(positive: np.ndarray, score: np.ndarray) -> float | None:
    if positive.all() or not positive.any():
        return None
    return auroc(positive.astype(int), score)


def venn_regions(members: dict[str, np.ndarray]) -> list[tuple[str, int]]:
    """Claims in each exact-membership region of boolean sets (plus ``none``).

    Parameters
    ----------
    members : dict of name -> bool array
        One set per judge, over the same claims (e.g. the claims it caught).

    Returns
    -------
    list of (region, count)
        Regions ``A``, ``B``, ``A & B``, ... for every non-empty subset (by size, then
        configuration order), then ``none`` (in no set).
    """
    names = list(members)
    matrix = (
        np.vstack([np.asarray(members[n], dtype=bool) for n in names])
        if names
        else np.zeros((0, 0), bool)
    )
    out = []
    for size in range(1, len(names) + 1):
        for subset in subsets(range(len(names)), size):
            inside = np.ones(matrix.shape[1], dtype=bool)
            for i in range(len(names)):
                inside &= matrix[i] if i in subset else ~matrix[i]
            out.append((" & ".join(names[i] for i in subset), int(inside.sum())))
    out.append(("none", int((~matrix.any(axis=0)).sum()) if names else 0))
    return out


# --------------------------------------------------------------------------- the study


def run(cfg: DictConfig, data: Any, params: Params) -> StudyResult:
    """Run S1, every judge and every combination on the claims of ``data``."""
    frame = data.frame
    for column in ("claim_id", "question", "claim", "passages", "label", "category"):
        if column not in frame.columns:
            raise DataError(f"not a claim frame: column {column!r} missing", field=column)
    if cfg.get("span_detector") is None and not cfg.get("judges"):
        raise ConfigError("claims_verification needs span_detector and/or judges configured")
    units = frame.copy()
    if "unit_id" not in units.columns:
        units["unit_id"] = units["claim_id"]
    claims = units.drop_duplicates("claim_id").reset_index(drop=True)
    n_available = len(claims)
    dataset_target = cfg.get("dataset", {}).get("_target_") if cfg.get("dataset") else None
    limit = resolve_limit(params.limit, dataset_target)
    claims = select_claims(claims, limit, params.limit_strategy, int(cfg.seed))
    claims = claims.reset_index(drop=True)
    sample_note = sampling_note(len(claims), n_available, params.limit_strategy, int(cfg.seed))
    if sample_note:
        log.warning("claims_verification: %s (study.params.limit=%s)", sample_note, params.limit)
    claim_ids = claims["claim_id"].tolist()
    units = units[units["claim_id"].isin(set(claim_ids))].reset_index(drop=True)
    index_of = {c: i for i, c in enumerate(claim_ids)}
    unit_claim = units["claim_id"].map(index_of).to_numpy()
    positive = is_flagged(claims["label"])
    detector = MetaClaimDetector(params.meta_patterns, params.meta_extra_patterns)
    meta = detector.detect(claims["claim"])
    progress = bool(cfg.get("progress", False))
    log.info(
        "claims_verification: %d claims (%d units), %d positives, %d meta-claims",
        len(claims),
        len(units),
        int(positive.sum()),
        int(meta.sum()),
    )

    result = StudyResult(titles={})
    runtime: dict[str, Any] = {"claims": len(claims), "units": len(units)}
    labels: dict[str, np.ndarray] = {}
    abstained: dict[str, np.ndarray] = {}
    scores = claims[["claim_id", "response_id", "label", "category"]].copy()
    scores["positive"] = positive.astype(np.int64)
    scores["meta_claim"] = meta

    # S1 is built first (its name must not clash with a judge's) and scored after the
    # judges, so a long run stores judge answers in the cache from its first minutes on.
    s1 = instantiate(cfg.span_detector, _convert_="all") if cfg.get("span_detector") else None
    s1_row = None
    judge_runs: dict[str, JudgeRun] = {}
    cache_root = None
    if params.answer_cache:
        cache_root = params.cache_dir or str(artifacts_dir() / "cache" / "judges")
    cache = AnswerCache(cache_root)
    runtime["answer_cache"] = {"enabled": params.answer_cache, "folder": cache_root}
    built: dict[str, Any] = {}
    for name, node in (cfg.get("judges") or {}).items():
        if s1 is not None and name == s1.name:
            raise ConfigError(f"judge name {name!r} clashes with the span detector's name")
        built[name] = instantiate(node, _convert_="all")
    unit_verdicts = judge_units(built, units, progress, cache)
    for name, judge in built.items():
        judge_runs[name] = jr = run_judge(name, judge, units, claim_ids, unit_verdicts[name])
        labels[name] = jr.labels
        abstained[name] = jr.abstained
        scores[f"{name}__label"] = jr.labels
        scores[f"{name}__abstained"] = jr.abstained
        scores[f"{name}__calls"] = jr.calls
        runtime.setdefault("judges", {})[name] = {
            **jr.describe,
            **judge.stats.to_dict(),
            "seconds": round(float(jr.seconds.sum()), 3),
            "seconds_per_claim": round(float(jr.seconds.mean()), 4),
        }
    if s1 is not None:
        unit_scores = s1.score(
            units["question"].tolist(),
            units["claim"].tolist(),
            units["passages"].tolist(),
            progress=progress,
        )
        s1_max = _min_per_claim(unit_scores.max_prob, unit_claim, len(claims))
        s1_shares = {
            t: _min_per_claim(v, unit_claim, len(claims)) for t, v in unit_scores.shares.items()
        }
        labels[s1.name] = s1.labels(s1_shares[s1.threshold])
        abstained[s1.name] = np.zeros(len(claims), dtype=bool)
        s1_row = f"S1 span detector [{s1.weights_tag()}]"
        scores["s1_max_prob"] = s1_max
        scores["s1_share"] = s1_shares[s1.threshold]
        scores["s1_label"] = labels[s1.name]
        runtime["span_detector"] = {
            **s1.describe(),
            "seconds": round(unit_scores.seconds, 3),
            "seconds_per_claim": round(unit_scores.seconds / len(claims), 4),
        }
        if hasattr(s1.verifier, "runtime_info"):
            runtime["span_detector"]["verifier"] = s1.verifier.runtime_info()
        result.tags["s1_weights"] = s1.weights_tag()

    judges = list(judge_runs)

    systems: list[tuple[str, np.ndarray, np.ndarray]] = []  # (row, labels, abstained)
    if s1 is not None:
        systems.append((s1_row, labels[s1.name], abstained[s1.name]))
    for j in judges:
        systems.append((f"S2 LLM judge / {j}", labels[j], abstained[j]))
        if s1 is not None:
            s1l = labels[s1.name]
            flagged_s1 = is_flagged(s1l)
            systems += [
                (f"S3 AND / {j}", and_rule(s1l, labels[j]), abstained[j]),
                (f"S4 vote / {j}", vote_rule(s1l, labels[j]), abstained[j]),
                (f"S5 cascade / {j}", cascade_rule(s1l, labels[j]), abstained[j] & flagged_s1),
            ]
    for row, lab, _ in systems:
        scores[f"system: {row}"] = lab

    combos = enumerate_combinations(judges, s1.name if s1 is not None else None)

    for suffix, _ in SUBSETS:
        keep = ~meta if suffix else np.ones(len(claims), dtype=bool)
        ctx = _Subset(suffix, keep, positive, claims, labels, abstained, sample_note)
        _data_table(result, ctx, meta)
        _systems_table(result, ctx, systems)
        if s1 is not None:
            _s1_tables(result, ctx, s1, s1_row, s1_shares, s1_max)
        if judges:
            _venn_tables(result, ctx, judges)
            _abstention_table(result, ctx, judge_runs, units, unit_claim)
        if combos:
            _combination_table(result, ctx, combos)
        _category_table(result, ctx, systems, judges)
        if judges:
            _cost_table(result, ctx, s1, judge_runs, runtime, params.timing_in_tables)
    if judges:
        _meta_precision_table(result, positive, meta, labels, abstained, judges, sample_note)

    result.scores = scores
    result.runtime["claims_verification"] = runtime
    result.extra["claims_setup.json"] = {
        "dataset": getattr(data, "name", None),
        "claims": claim_ids,
        "limit": params.limit,
        "limit_used": limit,
        "claims_available": n_available,
        "sampling": sample_note or "none (every claim judged)",
        "limit_strategy": params.limit_strategy,
        "seed": int(cfg.seed),
        "span_detector": s1.describe() if s1 is not None else None,
        "judges": {j: jr.describe for j, jr in judge_runs.items()},
        "meta_claims": [c for c, m in zip(claim_ids, meta, strict=True) if m],
        "combinations": [c.name for c in combos],
    }
    if params.keep_outputs and judges:
        result.extra["claims_verdicts.json"] = {j: jr.unit_records for j, jr in judge_runs.items()}
    result.tags.update(
        {
            "dataset": str(getattr(data, "name", "")),
            "claims": str(len(claims)),
            "judges": ",".join(judges),
            "judge_families": ",".join(
                sorted({jr.describe["family"] for jr in judge_runs.values()})
            ),
        }
    )
    return result


def _min_per_claim(values: np.ndarray, unit_claim: np.ndarray, n: int) -> np.ndarray:
    out = np.full(n, np.inf)
    np.minimum.at(out, unit_claim, np.asarray(values, dtype=np.float64))
    return out


@dataclass
class _Subset:
    suffix: str
    keep: np.ndarray
    positive: np.ndarray
    claims: pd.DataFrame
    labels: dict[str, np.ndarray]
    abstained: dict[str, np.ndarray]
    note: str = ""

    def table(self, result: StudyResult, base: str) -> str:
        table = base + self.suffix
        title = TITLES[base] + (" (meta-claims set aside)" if self.suffix else "")
        result.titles[table] = title + (f" [{self.note}]" if self.note else "")
        return table

    @property
    def pos(self) -> np.ndarray:
        return self.positive[self.keep]


def _data_table(result: StudyResult, ctx: _Subset, meta: np.ndarray) -> None:
    t = ctx.table(result, "data")
    lab = ctx.claims["label"].to_numpy()[ctx.keep]
    result.add(t, "claims", "count", float(ctx.keep.sum()))
    for label in LABELS:
        result.add(t, label, "count", float((lab == label).sum()))
    result.add(t, "flag-task positives (yellow + red)", "count", float(ctx.pos.sum()))
    result.add(t, "meta-claims", "count", float(meta[ctx.keep].sum()))


def _systems_table(
    result: StudyResult, ctx: _Subset, systems: list[tuple[str, np.ndarray, np.ndarray]]
) -> None:
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


def _s1_tables(
    result: StudyResult,
    ctx: _Subset,
    s1: Any,
    s1_row: str,
    shares: dict[float, np.ndarray],
    max_prob: np.ndarray,
) -> None:
    t = ctx.table(result, "s1_sweep")
    for threshold in s1.sweep:
        row = f"{threshold:g}" + (" (used)" if threshold == s1.threshold else "")
        flagged = (shares[threshold] > 0)[ctx.keep]
        for column, value in flag_metrics(flagged, ctx.pos).items():
            result.add(t, row, column, value)
    t = ctx.table(result, "s1_auroc")
    result.add(t, s1_row, "AUROC (max token prob)", _safe_auroc(ctx.pos, max_prob[ctx.keep]))
    result.add(
        t,
        s1_row,
        f"AUROC (share > {s1.threshold:g})",
        _safe_auroc(ctx.pos, shares[s1.threshold][ctx.keep]),
    )
    result.add(t, s1_row, "positives", float(ctx.pos.sum()))
    result.add(t, s1_row, "negatives", float((~ctx.pos).sum()))


def _venn_tables(result: StudyResult, ctx: _Subset, judges: list[str]) -> None:
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


def _combination_table(result: StudyResult, ctx: _Subset, combos: list[Any]) -> None:
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


def _category_table(
    result: StudyResult,
    ctx: _Subset,
    systems: list[tuple[str, np.ndarray, np.ndarray]],
    judges: list[str],
) -> None:
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


def _cost_table(
    result: StudyResult,
    ctx: _Subset,
    s1: Any,
    judge_runs: dict[str, JudgeRun],
    runtime: dict[str, Any],
    timing_in_tables: bool,
) -> None:
    t = ctx.table(result, "cost")
    n = float(ctx.keep.sum())
    s1_flagged = is_flagged(ctx.labels[s1.name])[ctx.keep] if s1 is not None else None
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


def _abstention_table(
    result: StudyResult,
    ctx: _Subset,
    judge_runs: dict[str, JudgeRun],
    units: pd.DataFrame,
    unit_claim: np.ndarray,
) -> None:
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


def _meta_precision_table(
    result: StudyResult,
    positive: np.ndarray,
    meta: np.ndarray,
    labels: dict[str, np.ndarray],
    abstained: dict[str, np.ndarray],
    judges: list[str],
    note: str = "",
) -> None:
    t = "meta_precision"
    result.titles[t] = TITLES[t] + (f" [{note}]" if note else "")
    rows = [(f"S2 LLM judge / {j}", labels[j], abstained[j]) for j in judges]
    if len(judges) > 1:
        union = union_rule([labels[j] for j in judges])
        ab = np.zeros(len(positive), dtype=bool)
        for j in judges:
            ab |= abstained[j]
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


# --------------------------------------------------------------------------- figures


def figures(cells: pd.DataFrame) -> dict[str, Any]:
    """Venn diagrams of catches and false alarms, combination F1 bars, the S1 sweep."""
    import matplotlib

    matplotlib.use("Agg")
    out: dict[str, Any] = {}
    tables = set(cells["table"])
    for table in ("venn_catches", "venn_false_alarms"):
        if table in tables:
            out[table] = venn_figure(cells, table)
    if "combinations" in tables:
        out["combinations_f1"] = combination_bars(cells, "combinations")
    if "s1_sweep" in tables:
        out["s1_sweep"] = sweep_figure(cells, "s1_sweep")
    return out


def _rows(cells: pd.DataFrame, table: str, column: str) -> dict[str, float | None]:
    sub = cells[(cells["table"] == table) & (cells["column"] == column)]
    return {
        r: (None if pd.isna(v) else float(v)) for r, v in zip(sub["row"], sub["value"], strict=True)
    }


def venn_figure(cells: pd.DataFrame, table: str) -> Any:
    """Circles with per-region counts for 2 or 3 judges; bars per region otherwise."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle

    values = _rows(cells, table, "claims")
    judges = [r[len("total: ") :] for r in values if r.startswith("total: ")]
    regions = {
        r: v
        for r, v in values.items()
        if not r.startswith(("total: ", "abstentions: ", "on decided claims: ", "decided share: "))
        and r != "claims in scope"
    }
    labels = {j: _judge_label(values, j) for j in judges}
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    title = TITLES.get(table, table)
    if len(judges) in (2, 3):
        centres = (
            [(-0.5, 0.0), (0.5, 0.0)]
            if len(judges) == 2
            else [(-0.5, 0.3), (0.5, 0.3), (0.0, -0.5)]
        )
        colours = ["#4477aa", "#ee6677", "#228833"]
        for (x, y), colour, judge in zip(centres, colours, judges, strict=False):
            ax.add_patch(Circle((x, y), 0.9, alpha=0.25, color=colour))
            total = values.get(f"total: {judge}") or 0
            name_y = y + 1.0 if y >= 0 else y - 1.05  # above a top circle, below a bottom one
            ax.text(x, name_y, f"{labels[judge]} · {total:g}", ha="center", va="center", fontsize=7)
        for region, count in regions.items():
            if region == "none":
                continue
            members = region.split(" & ")
            idx = [judges.index(m) for m in members]
            x = float(np.mean([centres[i][0] for i in idx]))
            y = float(np.mean([centres[i][1] for i in idx]))
            if len(idx) == 1 and len(judges) > 1:
                x, y = x * 1.25, y * 1.25
            ax.text(x, y, f"{count:g}", ha="center", va="center", fontsize=11)
        ax.text(0.0, -1.85, f"in no judge: {regions.get('none', 0):g}", ha="center", fontsize=9)
        ax.set_xlim(-2.0, 2.0)
        ax.set_ylim(-2.0, 1.5)
        ax.set_aspect("equal")
        ax.axis("off")
    else:
        names = list(regions)
        ax.barh(names, [regions[n] or 0 for n in names], color="#4477aa")
        ax.invert_yaxis()
        ax.set_xlabel("claims")
        ax.text(
            1.0, -0.12, "; ".join(labels.values()), transform=ax.transAxes, ha="right", fontsize=7
        )
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def _judge_label(values: dict[str, float | None], judge: str) -> str:
    """``name (decided 40 %, mostly abstained)`` for a judge in a Venn figure."""
    share = values.get(f"decided share: {judge}")
    if share is None:
        return judge
    mark = ", MOSTLY ABSTAINED" if 1.0 - share > MOSTLY_ABSTAINED else ""
    decided = values.get(f"on decided claims: {judge}")
    on_decided = f", {decided:g} on decided" if decided is not None else ""
    return f"{judge} (decided {share:.0%}{on_decided}{mark})"


def combination_bars(cells: pd.DataFrame, table: str) -> Any:
    """F1 of each combination, best first."""
    import matplotlib.pyplot as plt

    f1 = _rows(cells, table, "f1")
    decided = _rows(cells, table, "f1 (decided)")
    marked = _rows(cells, table, MARK_COLUMN)
    names = list(f1)
    shown = [f"{n}  [MOSTLY ABSTAINED]" if marked.get(n) else n for n in names]
    fig, ax = plt.subplots(figsize=(7.0, max(2.5, 0.32 * len(names) + 1)))
    y = np.arange(len(names))
    ax.barh(
        y - 0.2,
        [f1[n] or 0.0 for n in names],
        height=0.4,
        color=["#bbbbbb" if marked.get(n) else "#4477aa" for n in names],
        label="F1, abstentions as yellow flags",
    )
    if decided:
        ax.barh(
            y + 0.2,
            [decided.get(n) or 0.0 for n in names],
            height=0.4,
            color="#ee6677",
            label="F1 on decided claims",
        )
        ax.legend(fontsize=7, loc="lower right")
    ax.set_yticks(y, shown)
    ax.invert_yaxis()
    ax.set_xlabel("F1 (flag task); grey = more than half of the claims abstained")
    ax.set_xlim(0, 1)
    ax.tick_params(axis="y", labelsize=7)
    ax.set_title(TITLES.get(table, table), fontsize=9)
    fig.tight_layout()
    return fig


def sweep_figure(cells: pd.DataFrame, table: str) -> Any:
    """Claims flagged and true alarms of S1 against its token threshold."""
    import matplotlib.pyplot as plt

    flags = _rows(cells, table, "flags")
    hits = _rows(cells, table, "true_alarms")
    rows = list(flags)
    xs = [float(r.split(" ")[0]) for r in rows]
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.plot(xs, [flags[r] for r in rows], marker="o", label="claims flagged")
    ax.plot(xs, [hits[r] for r in rows], marker="s", label="true alarms")
    ax.set_xscale("log")
    ax.set_xlabel("token threshold")
    ax.set_ylabel("claims")
    ax.legend(fontsize=8)
    ax.set_title(TITLES.get(table, table), fontsize=9)
    fig.tight_layout()
    return fig
