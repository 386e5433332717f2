"""The pipeline's two small hooks for studies that leave more than tables behind.

Why separate: most studies return cells, scores and JSON extras, which
`runner.reporting.outputs` writes and `runner.tracking` logs. The routing studies also
leave files (``decisions.parquet``), documents drawn after the figures exist
(``report.md`` / ``report.html``) and a model to register; these two calls keep that out
of the shared writers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig


def after_outputs(study: Any, result: Any, output_dir: Path) -> list[str]:
    """Write the result's extra files and the study's documents; return their names."""
    written = []
    for name, obj in (getattr(result, "files", None) or {}).items():
        path = Path(output_dir) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(obj, pd.DataFrame):
            obj.to_parquet(path, index=False)
        elif isinstance(obj, bytes):
            path.write_bytes(obj)
        else:
            path.write_text(str(obj))
        written.append(name)
    documents = getattr(study, "documents", None)
    if documents is not None:
        for name, text in documents(result, Path(output_dir)).items():
            (Path(output_dir) / name).write_text(text)
            written.append(name)
    return written


def after_logging(cfg: DictConfig, result: Any, run_id: str | None, output_dir: Path) -> dict:
    """Register a model the study produced and link routing/audit runs to their model."""
    from runner.routing.registry import link_run_to_model, log_result_model

    record = log_result_model(cfg, result, run_id, output_dir)
    link_run_to_model(cfg, result, run_id)
    return record
