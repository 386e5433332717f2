"""One module per study, each one `Study` subclass: the paper's recipe over built inputs.

The contract (`runner.studies.contract`): a study receives `Inputs` (loaded data, the
parts the pipeline built from the config and, for `route` and `audit`, the registered
model the pipeline loaded for it) and typed `Params`, and returns a `StudyResult`; it
never reads files, talks to MLflow or sees Hydra. What a run leaves in MLflow beyond its
own run (a model to register, the model version it used) is a typed field of the result
that `runner.tracking.publish` handles. `figures(cells)` draws from the long-format cells
alone, so `make tables` can redraw them without recomputing.
"""

from __future__ import annotations

from typing import Any

from runner.lazy_exports import on_first_use
from runner.studies.contract import Inputs, Study, available_studies, load_study

__all__ = [
    "Inputs",
    "Study",
    "available_studies",
    "grouped_split",
    "load_study",
]

_ON_FIRST_USE = {"grouped_split": "runner.studies.train_detector"}
"""The detector's context-grouped validation split, which measurement scripts reuse so their
validation rows are the detector's; its study module is imported only when it is asked for."""


def __getattr__(name: str) -> Any:
    return on_first_use(__name__, _ON_FIRST_USE, name)
