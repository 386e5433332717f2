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

from runner.studies.contract import Inputs, Study, available_studies, load_study

__all__ = [
    "Inputs",
    "Study",
    "available_studies",
    "load_study",
]
