"""Stage 2, routing: a registered gate decides rows, in batches, resumably, on any engine.

`registry.py` loads the version a run routes with; `stream.py` routes batches (every
decision written before the next batch), `work_folder.py` keeps what a killed run already
decided, `engines.py` runs the batches here, in forked processes or on Ray, and
`traffic.py` holds what routed traffic realised and the audit sample. Builds on the
contract (`runner.routing.contract`) and the pyfunc (`runner.routing.model`).
"""

from runner.routing.route.registry import RoutedModel, load_routed_model, parse_model_uri
from runner.routing.route.stream import HIDDEN
from runner.routing.route.traffic import realised
from runner.routing.route.work_folder import WorkFolder, work_key, work_root

__all__ = [
    "HIDDEN",
    "RoutedModel",
    "WorkFolder",
    "load_routed_model",
    "parse_model_uri",
    "realised",
    "work_key",
    "work_root",
]
