"""Tables of the predicted-label HRI study: ranking per scope, label counts, outputs.

Why a module: `runner.studies.hri_predicted` orchestrates (run the verifiers, score the
HRI); the cells it writes are built here, with the calibration machinery of
`runner.hri.calibration_tables`, so the study stays a short orchestrator and every
table is computed one way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from runner.data import LoadedData, Response, responses_from_frame
from runner.errors import ConfigError, DataError
from runner.evaluation import BootstrapConf, metrics, percentile_interval, resample_weights
from runner.hri import calibration_tables
from runner.results import StudyResult


def collection_responses(
    data: LoadedData, collection: str
) -> tuple[list[Response], dict[str, list]]:
    """The collection's responses, and every collection labelling exactly the same claims."""
    every = responses_from_frame(data.frame)
    tasks = list(dict.fromkeys(r.task for r in every))
    if collection not in tasks:
        raise ConfigError(
            f"study.params.collection={collection!r} is not in the data (collections: {tasks})"
        )
    chosen = [r for r in every if r.task == collection]
    for r in chosen:
        if r.outcome is None:
            raise DataError(
                f"response {r.response_id!r} has no outcome", file=r.file or None, field="outcome"
            )
    key = [(r.file, str(r.row), tuple(c.claim_id for c in r.claims)) for r in chosen]
    references = {collection: chosen}
    for t in tasks:
        if t == collection:
            continue
        other = {
            (r.file, str(r.row), tuple(c.claim_id for c in r.claims)): r
            for r in every
            if r.task == t
        }
        if all(k in other for k in key):
            references[t] = [other[k] for k in key]
    return chosen, references


def ranking_tables(
    result: StudyResult,
    suffix: str,
    members: list[int],
    y_all: np.ndarray,
    scored: dict[str, dict[int, Any]],
    responses: list[Response],
    ref_name: str,
    aggregations: list[str],
    boot: BootstrapConf,
    seed: list[int],
) -> dict[str, Any]:
    """Ranking and delta tables of one scope (the systems covering all its responses)."""
    y = y_all[members]
    name = {"_s1": "S1 sample", "_judged": "judged"}.get(suffix, "every response")
    if y.sum() == 0 or y.sum() == len(y):
        raise DataError(f"scope {name!r}: all {len(y)} responses have one outcome")
    result.add("hri_predicted_data", name, "responses", len(members))
    result.add("hri_predicted_data", name, "positives", float(y.sum()))
    result.add("hri_predicted_data", name, "claims", sum(len(responses[i].claims) for i in members))
    weights, _ = resample_weights(y, boot.n_resamples, seed)
    ones = np.ones((1, len(y)))
    samples: dict[str, dict] = {}
    points: dict[tuple[str, str, str], float] = {}
    for row, by_resp in scored.items():
        if not all(i in by_resp for i in members):
            continue
        scores = {a: np.array([by_resp[i].aggregations[a] for i in members]) for a in aggregations}
        samples[row] = {}
        calibration_tables.ranking_cells(
            result,
            f"hri_predicted_ranking{suffix}",
            row,
            y,
            scores,
            weights,
            boot.level,
            samples_out=samples[row],
        )
        for a, s in scores.items():
            at = metrics.ranking_metrics(y, s, ones)
            for metric in calibration_tables.METRICS:
                points[row, a, metric] = float(at[metric][0])
    _add_deltas(result, f"hri_predicted_delta{suffix}", samples, points, ref_name, boot.level)
    predicted = [k for k in points if not k[0].startswith("reference: ") and k[2] == "AUROC"]
    out: dict[str, Any] = {"responses": len(members), "systems": list(samples)}
    if predicted:
        best = max(predicted, key=lambda k: (points[k], -predicted.index(k)))
        out["best_auroc"] = {
            "system": best[0],
            "aggregation": best[1],
            "value": points[best],
            "reference_same_aggregation": points[ref_name, best[1], "AUROC"],
        }
    return out


def _add_deltas(
    result: StudyResult,
    table: str,
    samples: dict[str, dict],
    points: dict[tuple[str, str, str], float],
    ref_name: str,
    level: float,
) -> None:
    """Each system's difference from the reference labels, per aggregation and metric, with
    the percentile interval of the paired resampled differences."""
    for row in samples:
        if row == ref_name:
            continue
        for (a, metric), values in samples[row].items():
            result.add(
                table,
                row,
                f"{a}/{metric}",
                points[row, a, metric] - points[ref_name, a, metric],
                ci=percentile_interval(values - samples[ref_name][a, metric], level),
            )


def response_scopes(
    n: int, s1_responses: list[int] | None, judged_responses: list[int] | None
) -> list[tuple[str, list[int]]]:
    """The rankings' scopes: every response, then the S1 and the judged responses where
    they are fewer than the scope before (None: that system did not run)."""
    scopes = [("", list(range(n)))]
    if s1_responses is not None and len(s1_responses) < n:
        scopes.append(("_s1", s1_responses))
    if judged_responses is not None and len(judged_responses) < len(scopes[-1][1]):
        scopes.append(("_judged", judged_responses))
    return scopes


def ranking_scopes(
    result: StudyResult,
    scopes: list[tuple[str, list[int]]],
    scored: dict[str, dict[int, Any]],
    responses: list[Response],
    ref_name: str,
    aggregations: list[str],
    boot: BootstrapConf,
) -> dict[str, Any]:
    """Each scope's ranking and delta tables (`ranking_tables`, the scope's position in the
    bootstrap seed); returns each scope's summary by its name."""
    y_all = np.array([r.outcome for r in responses], dtype=np.float64)
    out: dict[str, Any] = {}
    for si, (suffix, members) in enumerate(scopes):
        out[suffix or "every response"] = ranking_tables(
            result, suffix, members, y_all, scored, responses, ref_name, aggregations, boot,
            [boot.seed, si],
        )  # fmt: skip
    return out


def summary_json(
    by_scope: dict[str, Any],
    mapping: dict[str, str],
    collection: str,
    responses: list[Response],
    claims: int,
    s1_responses: list[int],
    judged_responses: list[int],
    runtime: dict[str, Any],
    boot: BootstrapConf,
    data: LoadedData,
) -> dict[str, Any]:
    """``hri_predicted_summary.json``: the scopes' summaries, the verdict mapping, which
    responses and claims each verifier saw, the bootstrap and the data set."""
    return {
        "scopes": by_scope,
        "verdict_labels": mapping,
        "collection": collection,
        "responses": len(responses),
        "claims": claims,
        "s1_responses": [responses[i].response_id for i in s1_responses],
        "s1_claims": runtime["s1_claims"],
        "judged_responses": [responses[i].response_id for i in judged_responses],
        "judged_claims": runtime["judged_claims"],
        "bootstrap": dict(n_resamples=boot.n_resamples, level=boot.level, seed=boot.seed),
        "data": {"name": data.name, "fingerprint": data.fingerprint},
    }


def label_table(
    result: StudyResult,
    systems: dict[str, tuple[np.ndarray, np.ndarray]],
    responses: list[Response],
    collection: str,
    references: dict[str, list[Response]],
) -> None:
    """Claims, label counts and flag agreement with the reference labels, per system."""
    t = "hri_predicted_labels"
    ref = np.array([c.label_names() != ("SUPPORTED",) for r in responses for c in r.claims])
    for name, rs in references.items():
        flags = np.array([c.label_names() != ("SUPPORTED",) for r in rs for c in r.claims])
        row = f"reference: {name} labels"
        result.add(t, row, "claims", len(flags))
        result.add(t, row, "flagged", float(flags.sum()))
        result.add(t, row, f"flag agreement with {collection}", float((flags == ref).mean()))
    for row, (positions, labels) in systems.items():
        result.add(t, row, "claims", len(positions))
        for lab in ("green", "yellow", "red"):
            result.add(t, row, lab, float((labels == lab).sum()))
        result.add(
            t,
            row,
            f"flag agreement with {collection}",
            float(((labels != "green") == ref[positions]).mean()),
        )


def claim_key(responses: list[Response], owner: np.ndarray, i: int) -> str:
    r = responses[int(owner[i])]
    local = i - int(np.flatnonzero(owner == owner[i])[0])
    return f"{r.response_id}/{r.claims[local].claim_id}"


def verdict_record(verdict: Any) -> dict[str, Any]:
    record = verdict.to_dict()
    record.pop("seconds", None)
    return record


def judge_records(
    judges: dict[str, Any],
    answers: dict[str, list[Any]],
    responses: list[Response],
    owner: np.ndarray,
    judged: list[int],
) -> tuple[dict[str, np.ndarray], dict[str, list[dict]], dict[str, dict]]:
    """Per judge: its labels of the `judged` claims, its verdict records (keyed by claim) and
    its runtime record (calls, tokens, cache hits, seconds, abstentions)."""
    labels: dict[str, np.ndarray] = {}
    verdicts: dict[str, list[dict]] = {}
    runtime: dict[str, dict] = {}
    for name, judge in judges.items():
        got = answers[name]
        labels[name] = np.array([v.label for v in got], dtype=object)
        verdicts[name] = [
            {"claim": claim_key(responses, owner, i), **verdict_record(v)}
            for i, v in zip(judged, got, strict=True)
        ]
        runtime[name] = {
            **judge.describe(),
            **judge.stats.to_dict(),  # model calls, tokens, cache hits
            "seconds": round(float(sum(v.seconds for v in got)), 3),
            "abstained": int(sum(v.abstained for v in got)),
        }
    return labels, verdicts, runtime


def claims_json(
    responses: list[Response], owner: np.ndarray, systems: dict[str, tuple[np.ndarray, np.ndarray]]
) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for i in range(len(owner)):
        out[claim_key(responses, owner, i)] = {}
    for row, (positions, labels) in systems.items():
        for p, lab in zip(positions, labels, strict=True):
            out[claim_key(responses, owner, int(p))][row] = str(lab)
    return out


def scores_frame(
    responses: list[Response], scored: dict[str, dict[int, Any]], aggregations: list[str]
) -> pd.DataFrame:
    """One row per (response, system): the response's HRI under each aggregation."""
    rows = []
    for system, by_resp in scored.items():
        for i, res in sorted(by_resp.items()):
            r = responses[i]
            rows.append(
                {
                    "example_id": r.response_id,
                    "group_id": r.response_id,
                    "task": r.task,
                    "label": int(r.outcome),
                    "system": system,
                    **{a: res.aggregations[a] for a in aggregations},
                    "band": res.band,
                }
            )
    return pd.DataFrame(rows)
