"""Rows a study needs labelled: refused before any scoring when they are not.

Why in `data`: only a loader knows why its rows have no label (a file without a ``label``
column, MLflow traces whose assessment is unset or missing), so the check and its message
live beside the loaders; `fit_gate`, `operating_report` and `guarantee_check` call it first.
"""

from __future__ import annotations

from typing import Any

from runner.data.mlflow_traces import labelled_traces
from runner.errors import DataError
from runner.frames import check_labels


def require_labels(data: Any, what: str) -> Any:
    """Fail before any scoring when the file has no labels or a single class.

    MLflow traces say why a trace has no label themselves (`runner.data.labelled_traces`:
    ``dataset.label`` unset or matching no assessment, an unlabelled trace by its id) and,
    with ``dataset.skip_invalid=true``, leave the unlabelled ones out: the data to use is
    returned.
    """
    if data.info.get("origin") == "mlflow":
        data = labelled_traces(data, what)
    if not data.info.get("labelled", True):
        raise DataError(
            f"{what} needs labelled rows: add a 'label' column (1/0, true/false, "
            "hallucinated/faithful or FAIL/PASS)",
            file=data.files[0] if data.files else None,
            row="header",
            field="label",
        )
    check_labels(
        data.frame["label"], name=f"data set {data.name}", need_all="AUROC/AP", error=DataError
    )
    return data
