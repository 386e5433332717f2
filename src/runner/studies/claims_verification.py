"""Claim verification (seed 004): a span detector, LLM judges and their combinations.

Every configured verifier judges exactly the same claims against the same passages:

- S1 span detector (``span_detector``, `runner.claims.span_detector.SpanDetector`);
- S2 one run per configured LLM judge (``judges``, `runner.claims.judges`);
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
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from runner.claims import (
    MARK_COLUMN,
    MOSTLY_ABSTAINED,
    MetaClaimDetector,
    answer_cache,
    claim_units,
    enumerate_combinations,
    resolve_limit,
    run_judges,
    run_span_detector,
    sampling_note,
    select_claims,
    span_cache,
    tables,
    unit_frame,
)
from runner.data import is_flagged
from runner.errors import ConfigError
from runner.evaluation import BootstrapConf
from runner.results import StudyResult
from runner.studies.contract import RunContext, Study

# OmegaConf reads the Params annotations at runtime and does not understand `X | None`.
# ruff: noqa: UP045

log = logging.getLogger(__name__)

SUBSETS = (("", "every claim"), ("_no_meta", "meta-claims set aside"))

TITLES = {
    "data": "Claims judged: counts by label and meta-claims",
    "systems": "Flag task per system and judge (flagged = yellow or red)",
    "s1_sweep": "S1 span detector: claims flagged at each token threshold",
    "s1_auroc": "S1 span detector: AUROC / AP of the claim score (claim-bootstrap 95% CI)",
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
        Claims judged. ``auto``: a quick sample of `runner.claims.sampling.QUICK_LIMIT`
        claims of a public benchmark (WiCE, Factcheck-Bench), every claim of a user's file.
        An integer samples that many from any data set; None judges every claim. Any
        sampling is logged and named in every table title.
    limit_strategy : str
        ``stratified``: a seeded sample (``seed``) keeping each label's share; ``head``:
        the first claims in file order.
    meta_patterns, meta_extra_patterns : list of str
        Meta-claim patterns replacing (None = `runner.claims.meta.DEFAULT_PATTERNS`) or
        added to the defaults.
    timing_in_tables : bool
        Also put measured seconds per claim into the ``cost`` table (cells then vary).
    keep_outputs : bool
        Write every judge answer, reasoning and parse error to ``claims_verdicts.json``.
    answer_cache : bool
        Keep judge answers in a disk cache, ``<paths.cache_dir>/judges``, keyed by model
        hash, prompt text and decoding settings (`runner.claims.judges.cache`), so a re-run
        that changes only how verdicts are combined re-uses them. False: answers are still
        shared between the judges of one run (in memory), never read from or written to disk.
    span_cache : bool
        Keep S1's token probabilities in ``<paths.cache_dir>/span_detector``, keyed by the
        hashes of its weights and tokenizer, every setting and the exact inputs of the call
        (`runner.claims.span_cache`), so a re-run that changes only thresholds or
        combination rules does not recompute them. Outputs are identical either way.
    """

    limit: Any = "auto"
    limit_strategy: str = "stratified"
    meta_patterns: Optional[list[str]] = None
    meta_extra_patterns: list[str] = field(default_factory=list)
    timing_in_tables: bool = False
    keep_outputs: bool = True
    answer_cache: bool = True
    span_cache: bool = True

    def __post_init__(self) -> None:
        limit = self.limit
        if limit == "auto" or limit is None:
            return
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(
                f"study.params.limit must be a positive integer, null or auto, got {limit!r}"
            )


@dataclass
class ClaimsVerification(Study, name="claims_verification", titles=TITLES, paper="claims"):
    """Seed 004: S1, every judge and every combination on the same claims."""

    bootstrap: BootstrapConf  # S1's claim-bootstrap intervals
    span_detector: Any = None
    judges: dict[str, Any] = field(default_factory=dict)
    params: Params = field(default_factory=Params)

    def __post_init__(self) -> None:
        """At least one verifier, and no judge named like the span detector."""
        s1, judges = self.span_detector, self.judges
        if s1 is None and not judges:
            raise ConfigError("claims_verification needs span_detector and/or judges configured")
        if s1 is not None and s1.name in judges:
            raise ConfigError(f"judge name {s1.name!r} clashes with the span detector's name")

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Run S1, every judge and every combination on the claims of `data`."""
        params = self.params
        if self.span_detector is not None:  # before any judge or S1 call
            self.span_detector.check_disjoint(
                "claims_verification", getattr(data, "name", ""), getattr(data, "info", None)
            )
        cu, n_available, limit, note = self._select(data, run.seed)
        claims, claim_ids = cu.claims, cu.claim_ids
        positive = is_flagged(claims["label"])
        meta = MetaClaimDetector(params.meta_patterns, params.meta_extra_patterns).detect(
            claims["claim"]
        )
        log.info(
            "claims_verification: %d claims (%d units), %d positives, %d meta-claims",
            *(len(claims), len(cu.units), int(positive.sum()), int(meta.sum())),
        )
        runtime: dict[str, Any] = {"claims": len(claims), "units": len(cu.units)}
        scores = claims[["claim_id", "response_id", "label", "category"]].copy()
        scores["positive"] = positive.astype(np.int64)
        scores["meta_claim"] = meta
        result = StudyResult(titles={})
        judge_runs, s1, labels, abstained = self._verify(cu, run, runtime, scores, result)
        judges = list(judge_runs)
        systems = tables.system_rows(s1, judge_runs)
        for row, lab, _ in systems:
            scores[f"system: {row}"] = lab
        combos = enumerate_combinations(judges, s1.name if s1 is not None else None)

        for suffix, _ in SUBSETS:
            keep = ~meta if suffix else np.ones(len(claims), dtype=bool)
            ctx = tables.Scope(suffix, keep, positive, claims, labels, abstained, TITLES, note)
            runs = tables.Runs(s1, judge_runs, cu.unit_claim, runtime)
            tables.scope_tables(result, ctx, meta, systems, runs, combos, self.bootstrap,
                                params.timing_in_tables)  # fmt: skip
        if judges:
            title = TITLES["meta_precision"] + (f" [{note}]" if note else "")
            tables.meta_precision_table(result, title, positive, meta, judge_runs)

        result.scores = scores
        result.runtime["claims_verification"] = runtime
        result.extra["claims_setup.json"] = tables.setup_record(
            getattr(data, "name", None), claim_ids, params, limit, n_available, note, run.seed,
            self.span_detector if s1 is not None else None, judge_runs, meta, combos,
        )  # fmt: skip
        if params.keep_outputs and judges:
            result.extra["claims_verdicts.json"] = {
                j: jr.unit_records for j, jr in judge_runs.items()
            }
        families = sorted({jr.describe["family"] for jr in judge_runs.values()})
        result.tags.update(
            {
                "dataset": str(getattr(data, "name", "")),
                "claims": str(len(claims)),
                "judges": ",".join(judges),
                "judge_families": ",".join(families),
            }
        )
        return result

    def _select(self, data: Any, seed: int) -> tuple[Any, int, Any, str]:
        """The claims to verify (all, or the seeded sample ``limit`` asks for), as units;
        how many were available, the limit used and the sampling note."""
        params = self.params
        units = unit_frame(data.frame)
        claims = units.drop_duplicates("claim_id").reset_index(drop=True)
        limit = resolve_limit(params.limit, bool(data.info.get("public_benchmark")))
        cu = claim_units(units, select_claims(claims, limit, params.limit_strategy, seed))
        note = sampling_note(len(cu.claims), len(claims), params.limit_strategy, seed)
        if note:
            log.warning("claims_verification: %s (study.params.limit=%s)", note, params.limit)
        return cu, len(claims), limit, note

    def _verify(self, cu: Any, run: RunContext, runtime: dict, scores: Any, result: Any) -> tuple:
        """Every judge, then S1, on the claim units; their columns go into ``scores``.

        The judges run before S1, so a long run stores judge answers in the cache from its
        first minutes on.
        """
        params, n = self.params, len(cu.claims)
        cache, runtime["answer_cache"] = answer_cache(params.answer_cache, run.cache_dir)
        judge_runs = run_judges(self.judges, cu, run.progress, cache)
        for name, jr in judge_runs.items():
            scores[f"{name}__label"] = jr.labels
            scores[f"{name}__abstained"] = jr.abstained
            scores[f"{name}__calls"] = jr.calls
            runtime.setdefault("judges", {})[name] = jr.runtime(self.judges[name])
        labels = {j: jr.labels for j, jr in judge_runs.items()}
        abstained = {j: jr.abstained for j, jr in judge_runs.items()}
        s1 = None
        if self.span_detector is not None:
            s1_cache, runtime["span_cache"] = span_cache(params.span_cache, run.cache_dir)
            s1 = run_span_detector(self.span_detector, cu, run.progress, s1_cache)
            labels[s1.name] = s1.labels
            abstained[s1.name] = np.zeros(n, dtype=bool)
            scores["s1_max_prob"] = s1.max_prob
            scores["s1_share"] = s1.shares[s1.threshold]
            scores["s1_label"] = s1.labels
            runtime["span_detector"] = s1.runtime
            result.tags["s1_weights"] = self.span_detector.weights_tag()
        return judge_runs, s1, labels, abstained

    @classmethod
    def figures(cls, cells):
        """Venn diagrams of catches and false alarms, combination F1 bars, the S1 sweep."""
        from runner.reporting import claims_figures

        return claims_figures(cells, TITLES, MARK_COLUMN, MOSTLY_ABSTAINED)
