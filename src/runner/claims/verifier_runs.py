"""Running the claim verifiers over claim units: every judge, the span detector, their costs.

Why one place: the claim study needs each verifier's per-claim labels together with what
they cost (calls, seconds, cache hits) and every raw answer; how units are judged in turns
(so two setups of one model share each first answer) and combined per claim is machinery,
not the study's recipe.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from runner.claims.judges import AnswerCache
from runner.claims.span_cache import SpanScoreCache
from runner.claims.units import ClaimUnits, combine_units


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

    def runtime(self, judge: Any) -> dict[str, Any]:
        """The judge's description, call counters and measured seconds (for ``runtime``)."""
        return {
            **self.describe,
            **judge.stats.to_dict(),
            "seconds": round(float(self.seconds.sum()), 3),
            "seconds_per_claim": round(float(self.seconds.mean()), 4),
        }


@dataclass
class SpanRun:
    """The span detector's per-claim scores and labels (minimum over a claim's units)."""

    name: str
    row: str  # the table row, naming the weights it ran with
    max_prob: np.ndarray
    shares: dict[float, np.ndarray]
    labels: np.ndarray
    threshold: float  # the token threshold the labels use
    sweep: tuple[float, ...]  # every token threshold reported
    runtime: dict[str, Any]


def answer_cache(enabled: bool, cache_dir: str | None) -> tuple[AnswerCache, dict[str, Any]]:
    """The judges' answer cache and its runtime entry.

    On disk in ``<cache_dir>/judges`` (``paths.cache_dir``, the run's one cache folder,
    shared by every study that runs judges) when ``enabled``; in memory only when disabled
    or when no cache folder is configured.
    """
    root = str(Path(cache_dir) / "judges") if enabled and cache_dir else None
    return AnswerCache(root), {"enabled": enabled, "folder": root}


def span_cache(enabled: bool, cache_dir: str | None) -> tuple[SpanScoreCache | None, dict]:
    """The span detector's score cache (``<cache_dir>/span_detector``) and its runtime entry.

    None when disabled or when no cache folder is known: S1 then computes every time.
    """
    root = str(Path(cache_dir) / "span_detector") if enabled and cache_dir else None
    return (SpanScoreCache(Path(root)) if root else None), {"enabled": enabled, "folder": root}


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


def run_judges(
    judges: dict[str, Any], cu: ClaimUnits, progress: bool, cache: AnswerCache
) -> dict[str, JudgeRun]:
    """Every judge on every unit (`judge_units`), combined per claim (`run_judge`)."""
    verdicts = judge_units(judges, cu.units, progress, cache)
    return {
        name: run_judge(name, judge, cu.units, cu.claim_ids, verdicts[name])
        for name, judge in judges.items()
    }


def claim_labels_s1(
    detector: Any,
    questions: list[str],
    texts: list[str],
    passages: list[list[str]],
    progress: bool,
    cache_dir: str | None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """The span detector's labels of whole claims (one unit each) and its runtime entry.

    For the HRI's predicted labels: the scores are read from and kept in the claim study's
    span cache (``<cache_dir>/span_detector``), so a claim scored by either study is
    scored once.
    """
    cache, _ = span_cache(True, cache_dir)
    out = detector.score(questions, texts, passages, progress, cache=cache)
    runtime = {
        **detector.describe(),
        "seconds": round(out.seconds, 3),
        "cached": out.cached,
        "computed_seconds": round(out.computed_seconds, 3),
    }
    return detector.labels(out.shares[detector.threshold]), runtime


def judge_claims(
    judges: dict[str, Any],
    questions: list[str],
    texts: list[str],
    passages: list[list[str]],
    progress: bool,
    cache_dir: str | None,
) -> dict[str, list[Any]]:
    """Every judge's answers on whole claims, through the claim study's answer cache.

    Answers keyed by model hash, prompt and decoding are shared with the claim study (and
    with earlier runs); memory only without a cache folder. The judges take turns claim by
    claim (`judge_units`), so setups of one model share each first answer and a repair
    starts from the model's kept keys/values.
    """
    cache, _ = answer_cache(True, cache_dir)
    units = pd.DataFrame({"question": questions, "claim": texts, "passages": passages})
    return judge_units(judges, units, progress, cache)


def run_span_detector(
    detector: Any, cu: ClaimUnits, progress: bool, cache: SpanScoreCache | None = None
) -> SpanRun:
    """The span detector on every unit; a claim takes its most supported unit's scores.

    With ``cache``, token probabilities of exactly these units under exactly this model and
    these settings are read back instead of computed (`runner.claims.span_cache`);
    ``runtime`` says so (``cached``) and keeps the seconds of the computation that made them.
    """
    units = cu.units
    scores = detector.score(
        units["question"].tolist(),
        units["claim"].tolist(),
        units["passages"].tolist(),
        progress=progress,
        cache=cache,
    )
    shares = {t: cu.per_claim_min(v) for t, v in scores.shares.items()}
    runtime = {
        **detector.describe(),
        "seconds": round(scores.seconds, 3),
        "seconds_per_claim": round(scores.seconds / len(cu.claims), 4),
        "cached": scores.cached,
        "computed_seconds_per_claim": round(scores.computed_seconds / len(cu.claims), 4),
    }
    if hasattr(detector.verifier, "runtime_info"):
        runtime["verifier"] = detector.verifier.runtime_info()
    return SpanRun(
        name=detector.name,
        row=f"S1 span detector [{detector.weights_tag()}]",
        max_prob=cu.per_claim_min(scores.max_prob),
        shares=shares,
        labels=detector.labels(shares[detector.threshold]),
        threshold=detector.threshold,
        sweep=tuple(detector.sweep),
        runtime=runtime,
    )
