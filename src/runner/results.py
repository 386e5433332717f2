"""What a study returns: tables as long-format cells, per-example scores, runtime.

Every number a table shows is one `Cell` (table, row, column, value, optional CI). The long
format is what `cells.csv` and `experiments/*/published.csv` share, so the reproduction
report is a join, and figures are drawn from cells alone (no recompute in `make tables`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

CELL_COLUMNS = ["table", "row", "column", "value", "ci_low", "ci_high"]


@dataclass(frozen=True)
class Cell:
    """One number of one table, with an optional confidence interval.

    `value` may be None only for a cell that is *not available* (e.g. accuracy of a
    random-weight verifier); such cells are written empty, never as a number.
    """

    table: str
    row: str
    column: str
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None

    def __post_init__(self) -> None:
        for name in ("value", "ci_low", "ci_high"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, (int, float)) or math.isnan(float(v))):
                raise ValueError(
                    f"cell {self.table}/{self.row}/{self.column}: {name} must be a finite "
                    f"number or None, got {v!r}"
                )


@dataclass
class ModelSpec:
    """A model a study leaves for the tracking layer to log into its run and register.

    `runner.tracking.hand_over` logs it as an MLflow pyfunc model, registers it as a new
    version of `name`, points `alias` at that version and tags the version with `tags`.
    With `version` set (a rerun that produced a version already registered) nothing new is
    logged: `alias` is pointed at that version.
    """

    python_model: Any
    name: str
    alias: str
    metadata: dict[str, Any]
    input_example: pd.DataFrame | None
    tags: dict[str, str] = field(default_factory=dict)
    artifacts: dict[str, str] | None = None  # name -> local path, shipped with the model
    signature: Any = None  # an MLflow ModelSignature (None: MLflow infers one)
    version: str | None = None  # an already registered version to reuse (no new version)


@dataclass(frozen=True)
class ModelLink:
    """The registered model version a run used (`route`, `audit`).

    The tracking layer tags the run with the model (``model_name``, ``model_version``,
    ``model_uri``) and the model version with the run: its tag `tag` (e.g.
    ``last_route_run``) is set to the run's id, so each side finds the other.
    """

    name: str
    version: str
    tag: str
    uri: str | None = None  # the URI the run asked for (e.g. ``models:/<name>@champion``)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Version tag -> a JSON record for the version, stamped with the run's id (``run_id``)
    when it is written, e.g. the audit's running test (`runner.routing.audit.sequential`)."""


class RunFeedback(Protocol):
    """Something a run writes back once its run id is known (assessments on traces)."""

    def write(self, run_id: str | None) -> dict[str, Any]:
        """Write it; return a JSON-serialisable summary (``trace_assessments.json``)."""
        ...

    def undo(self) -> int:
        """Remove what `write` wrote (the run failed before it was published); how many."""
        ...


@dataclass
class StudyResult:
    """Everything a study produced, before tracking and reporting touch it.

    Attributes
    ----------
    cells : list of Cell
        Every table cell (tables are identified by `Cell.table`).
    scores : DataFrame or None
        Per-example scores (one column per gate/verifier, plus `example_id`, `group_id`,
        `task`, `label` and `fold` where there are folds).
    runtime : dict
        Measured cost, e.g. ``{"gates": {"rouge_l": {"ms_per_example": 0.05}}}``.
    titles : dict
        Table id -> human title, used by the renderers.
    extra : dict
        Other JSON-serialisable artifacts (file name -> object), logged as JSON.
    tags : dict
        MLflow tags (e.g. ``{"weights": "random"}``).
    files : dict
        Other files for the output folder (name -> DataFrame as Parquet, bytes or text).
    model : ModelSpec or None
        A model for the tracking layer to log and register with the run; studies never
        log it themselves.
    model_link : ModelLink or None
        The registered model version the run used; the tracking layer links the two.
    series : dict
        Metrics with a step (name -> list of (step, value)), e.g. a training loss per
        step; MLflow keeps each as a metric history (``series/<name>``).
    metrics : dict
        Run-level numbers that are no table cell, logged under their own name (e.g.
        ``audit_alarm``, ``shift_ks_p``).
    trace_feedback : RunFeedback or None
        Assessments to log onto MLflow traces once the run id is known
        (`runner.routing.audit.trace_feedback.TraceFeedback`, from `route` over traces).
    """

    cells: list[Cell] = field(default_factory=list)
    scores: pd.DataFrame | None = None
    runtime: dict[str, Any] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    files: dict[str, Any] = field(default_factory=dict)
    model: ModelSpec | None = None
    model_link: ModelLink | None = None
    series: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    trace_feedback: RunFeedback | None = None

    def add(
        self,
        table: str,
        row: str,
        column: str,
        value: float | None,
        ci: tuple[float, float] | None = None,
    ) -> None:
        """Append one cell; `ci` is a (low, high) pair or None."""
        low, high = (None, None) if ci is None else (float(ci[0]), float(ci[1]))
        self.cells.append(
            Cell(table, row, column, None if value is None else float(value), low, high)
        )

    def cells_frame(self) -> pd.DataFrame:
        """Cells in the long format of `cells.csv` (CI columns empty where absent)."""
        return cells_to_frame(self.cells)


def cells_to_frame(cells: list[Cell]) -> pd.DataFrame:
    """Long-format frame with the columns of `CELL_COLUMNS`, in insertion order."""
    rows = [(c.table, c.row, c.column, c.value, c.ci_low, c.ci_high) for c in cells]
    frame = pd.DataFrame(rows, columns=CELL_COLUMNS)
    keys = frame[["table", "row", "column"]]
    dup = keys.duplicated()
    if dup.any():
        first = keys[dup].iloc[0].tolist()
        raise ValueError(f"duplicate table cell {first}: every cell must be written once")
    return frame
