"""A trained detector's card, ``detector.json`` beside its weights: the input rule, the
example threshold and the training summary.

Why its own module: training writes the card and every verifier that loads the model
reads it (the input rule it scores with comes from there), so the file's one reader and
one writer sit on the inference side, which training imports.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_detector_card(folder: Path, card: dict[str, Any]) -> None:
    """``detector.json`` beside the weights: input rule, threshold, training summary."""
    path = Path(folder) / "detector.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(card, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


def read_detector_card(folder: str | Path) -> dict[str, Any] | None:
    """The ``detector.json`` of a model folder, or None when the folder has none."""
    path = Path(folder) / "detector.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text())
