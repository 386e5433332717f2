"""One module per study, each one `Study` subclass: the paper's recipe over built inputs.

The contract (`runner.studies.contract`): a study is a dataclass whose fields are the
parts it takes and its typed `Params`; the experiment's YAML configures it and Hydra's
`instantiate` builds it. `run(data, run)` gets the loaded data and the `RunContext` and
returns a `StudyResult`; a study never reads a config or sees Hydra. What a run leaves in
MLflow beyond its own run (a model to register, the model version it used) is a typed
field of the result that `runner.tracking.hand_over` handles. `figures(cells)` draws from
the long-format cells alone, so `make tables` can redraw them without recomputing.
"""

from __future__ import annotations

from runner.studies.contract import (
    RunContext,
    Study,
    available_studies,
    check_named,
    configured,
    load_study,
)

__all__ = [
    "RunContext",
    "Study",
    "available_studies",
    "check_named",
    "configured",
    "load_study",
]
