"""One module per study, each one `Study` subclass: the paper's recipe over built inputs.

The contract (`runner.studies.contract`): a study receives `Inputs` (loaded data and the
parts the pipeline built from the config) and typed `Params`, and returns a
`StudyResult`; it never reads files, talks to MLflow or sees Hydra. `figures(cells)` draws
from the long-format cells alone, so `make tables` can redraw them without recomputing.
"""

from __future__ import annotations

from runner.studies.contract import Inputs, Study, available_studies, load_study

__all__ = ["Inputs", "Study", "available_studies", "load_study"]
