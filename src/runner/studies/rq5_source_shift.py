"""RQ5: does learned calibration survive source shift, and how many target labels recover it?

Three settings on a data set with a `source` column (HaluBench: `source_ds`; RAGTruth:
the task), all with the calibrated gate (RAGScope-C, no TF-IDF) beside the training-free
uncovered-token score:

1. In-domain 5-fold CV on all rows (Table VIII, in-domain line). The split is the
   experiment's `split`: grouped by passage by default (HaluBench repeats passages, and a
   row-level fold would put the same passage on both sides); `split=kfold` is the paper's
   row-level CV (`in_domain_group_col` says which unit the leakage check guards).
2. Leave-one-source-out (``splits.cross_source``): train on the other sources, score the
   held-out one; AUROC/AP with within-source group-bootstrap intervals (Table VIII a).
3. Target-only adaptation (``splits.target``): per source a fixed stratified 20 % test
   set, k labelled rows drawn (prevalence-preserving) from the other 80 %, fit on the
   sample only, repeated over seeds; macro mean over sources ± standard error over seeds
   (Table VIII b). With ``splits.target.group_col=group_id`` (the experiment's setting)
   rows that share a passage with the test set are kept out of the pool (the
   paper samples rows; HaluBench repeats passages), so k is capped where the pool is
   smaller, and the caps are reported in `sources.json` and the per-source table.
   Rows are labelled by the labels actually used (`k=191 (cap)`, `(whole pool)`); where
   every source drew its whole pool the SE over seeds is undefined (written empty), not 0.
   Zero-shot and cross-source are also scored on the same fixed test sets
   (`table8b_same_test_sets`), so the target-only gain is read like for like.

Macro rows average over the sources the data holds; which ones they are is recorded in
`sources.json`, and the published table's other sources are marked missing, not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runner.errors import ConfigError, DataError
from runner.evaluation import BootstrapConf, score_gates, source_shift
from runner.evaluation import source_shift_tables as tables
from runner.features import with_lexical_features
from runner.frames import check_labels
from runner.reporting import TITLES_FILE
from runner.results import StudyResult
from runner.studies.contract import RunContext, Study, check_named, configured

TITLES = {
    "table8_in_domain": "Table VIII (in-domain): 5-fold CV on all rows",
    "table8a": "Table VIII (a): leave one source out, within-source bootstrap 95 % CI",
    "table8b": "Table VIII (b): macro target adaptation, mean and SE over seeds",
    "table8b_same_test_sets": "Like for like: every setting on the same fixed test sets",
    "table8b_per_source": "Per source, on its fixed test set (target-only: mean over seeds)",
}
SPLITS = {
    "cross_source": "leave-one-source-out (split/leave_source_out)",
    "target": "target-only adaptation (split/target_adaptation)",
}


@dataclass
class Params:
    """RQ5 parameters. The two source-shift designs are splitters of their own
    (``splits.cross_source``, ``splits.target``): their settings (``splits.target.ks``,
    ``splits.target.n_seeds``, ``splits.target.test_fraction``, ``splits.target.group_col``)
    are set there, not here."""

    calibrated_gate: str = "ragscope_c"  # the learned gate that is transferred / adapted
    zero_shot_gate: str = "uncovered"  # the training-free reference score
    min_sources: int = 2  # leave-source-out needs at least this many sources
    # Unit of the in-domain CV's leakage check: null = the split's own group column when it
    # has one (grouped_kfold: the passage), else example_id (split=kfold: every row its own
    # unit, the paper's row-level CV, where a passage may sit on both sides of a fold).
    in_domain_group_col: str | None = None


@dataclass
class SourceShift(
    Study,
    name="rq5_source_shift",
    titles=TITLES,
    paper="ragscope",
    paper_datasets=("halubench",),  # Table VIII is HaluBench; other data sets have no row
):
    """RQ5: in-domain CV, leave-one-source-out and target-only adaptation (Table VIII)."""

    gates: dict[str, Any]
    split: Any
    splits: dict[str, Any]
    bootstrap: BootstrapConf
    params: Params = field(default_factory=Params)

    def __post_init__(self) -> None:
        """Both gates are configured; both source-shift splitters are, on `source`."""
        configured(self.gates, "gates")
        for role in ("calibrated_gate", "zero_shot_gate"):
            check_named(self.gates, [getattr(self.params, role)], f"study.params.{role}", "gates")
        for key, what in SPLITS.items():
            if key not in self.splits:
                raise ConfigError(
                    f"rq5_source_shift needs splits.{key}, the {what}: add "
                    f"`- /split@splits.{key}: <name>` to the defaults in the experiment's YAML"
                )
            column = getattr(self.splits[key], "column", "source")
            if column != "source":
                raise ConfigError(
                    f"splits.{key}.column={column!r}: rq5_source_shift reads each row's "
                    f"source from the `source` column; set splits.{key}.column=source"
                )

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """In-domain CV, leave-one-source-out and target-only adaptation."""
        gates, boot, params = self.gates, self.bootstrap, self.params
        cal, zero = params.calibrated_gate, params.zero_shot_gate
        frame = with_lexical_features(data.frame, run.cache_dir).reset_index(drop=True)
        sources = self._sources(frame, data.name)
        y_all = frame["label"].to_numpy()
        src_all = frame["source"].astype(str).to_numpy()
        result = StudyResult(titles=dict(TITLES))

        # 1. in-domain CV
        splitter = self.split
        unit = source_shift.in_domain_unit(splitter, params.in_domain_group_col)
        pair = {cal: gates[cal], zero: gates[zero]}
        in_domain = score_gates(pair, frame, splitter, progress=run.progress, group_col=unit)
        result.titles["table8_in_domain"] = source_shift.in_domain_title(splitter, unit, frame)
        tables.add_in_domain(result, in_domain, (cal, zero))

        # 2. leave one source out: zero-shot and cross-source, within-source bootstrap
        splits = self.splits
        loso = source_shift.leave_source_out(
            gates[cal], gates[zero], frame, splits["cross_source"], boot, sources, run.progress
        )
        positive_rate = {s: float(y_all[src_all == s].mean()) for s in sources}
        tables.add_leave_source_out(result, loso, sources, positive_rate, TITLES["table8a"])

        # 3. target-only adaptation, and every setting on the same fixed test sets
        sampler = splits["target"]
        target, overlap = source_shift.target_only(gates[cal], frame, sampler, run.progress)
        pools, test_sets = sampler.pool_sizes(frame), sampler.test_sets(frame)
        macro_label, source_label, whole_everywhere = source_shift.k_labels(target, pools, sources)
        same_test = source_shift.same_test_sets(loso.scores, test_sets)
        tables.add_adaptation_titles(
            result,
            TITLES,
            sampler.test_fraction,
            src_all,
            sources,
            test_sets,
            macro_label,
            whole_everywhere,
        )
        tables.add_adaptation(
            result, loso, same_test, target, sampler.ks, macro_label, whole_everywhere
        )
        test_rate = {s: float(y_all[idx].mean()) for s, idx in test_sets.items()}
        tables.add_per_source(result, sources, same_test, target, source_label, test_rate, src_all)

        scores = in_domain.rename(columns={cal: f"in_domain_{cal}", zero: f"in_domain_{zero}"})
        result.scores = scores.merge(
            loso.scores[["example_id", source_shift.CROSS_SOURCE, source_shift.ZERO_SHOT]],
            on="example_id",
        )
        result.extra["sources.json"] = tables.sources_record(
            frame, sources, test_sets, pools, unit, sampler.caps(frame), overlap
        )
        result.extra["target_adaptation_runs.json"] = target.to_dict(orient="records")
        result.extra[TITLES_FILE] = dict(result.titles)  # `make tables` redraws with these
        return result

    def _sources(self, frame: Any, name: str) -> list[str]:
        """The data set's sources, once its labels and its number of sources are checked."""
        check_labels(frame["label"], name=f"data set {name}", need_all="AUROC/AP", error=DataError)
        sources = sorted(frame["source"].astype(str).unique())
        if len(sources) < self.params.min_sources:
            raise ConfigError(
                f"data set {name}: {len(sources)} source(s) {sources}; leave-source-out "
                f"needs at least {self.params.min_sources}: use a data set with a `source` "
                "column of several values (dataset=halubench, dataset=ragtruth)"
            )
        return sources

    @classmethod
    def figures(cls, cells):
        """Macro target-only AUROC and AP against k, with zero-shot and cross-source lines."""
        from runner.reporting import target_adaptation_curves

        return {"fig_rq5_target_adaptation": target_adaptation_curves(cells)}
