"""The pipeline's hook for studies that leave a model behind.

Why separate: most studies return cells, scores and JSON extras, which
`runner.reporting.outputs` writes and `runner.tracking` logs. The routing studies also
leave a model to register (and audit runs to link to it); this call keeps the model
registry out of the shared writers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig


def after_logging(cfg: DictConfig, result: Any, run_id: str | None, output_dir: Path) -> dict:
    """Register a model the study produced, link routing/audit runs to their model and
    write a route run's decisions onto the traces it routed (``trace_assessments.json``)."""
    from runner.routing.registry import link_run_to_model, log_result_model
    from runner.tracking import resolve_uri

    tracking_uri, _ = resolve_uri(cfg)
    record = log_result_model(tracking_uri, result, run_id, output_dir)
    link_run_to_model(tracking_uri, result, run_id)
    feedback = getattr(result, "trace_feedback", None)
    if feedback is not None:
        from runner.routing.trace_feedback import write, write_summary

        summary = write(feedback, run_id)
        (Path(output_dir) / "trace_assessments.json").write_text(write_summary(summary))
    return record
