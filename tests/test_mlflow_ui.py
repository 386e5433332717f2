"""What a user sees in the MLflow UI after a real run: named by its overrides, its real
Duration, the data set in the Dataset column.

A real `python -m runner` run (the HRI calibration study on Factcheck-Bench, a few seconds
of real work) logs into a fresh SQLite store; a real `mlflow server --workers 1` serves it
on 127.0.0.1; headless Chromium renders the experiment's runs page. Exact numbers come
from the REST API, what the page shows from Chromium's DOM; a screenshot is kept next
to the DOM in the test's folder for a person to look at.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from tests.conftest import mlflow_server, run_runner

pytestmark = pytest.mark.slow

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1600,1000",
    "--virtual-time-budget=30000",
]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no Chromium on PATH: run scripts/ci_system_deps.sh (apt-get install chromium)")


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())


def page_text(dom: str) -> str:
    """Visible text of a dumped DOM (scripts and styles dropped, whitespace collapsed)."""
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", text)
    return re.sub(r"\s+", " ", html.unescape(text))


def render(url: str, folder: Path, name: str) -> str:
    """Text of the page as Chromium renders it; also saves `<name>.html` and `<name>.png`."""
    profile = folder / f"profile-{name}"
    common = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
    dom = subprocess.run(
        [*common, "--dump-dom", url], capture_output=True, text=True, timeout=180
    ).stdout
    (folder / f"{name}.html").write_text(dom)
    subprocess.run(
        [*common, f"--screenshot={folder / f'{name}.png'}", url],
        capture_output=True,
        timeout=180,
    )
    return page_text(dom)


def seconds(shown: str, unit: str) -> float:
    return float(shown) * {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}[unit]


def test_the_runs_page_shows_override_names_the_study_duration_and_the_dataset(tmp_path):
    artifacts = tmp_path / "artifacts"
    env = {**os.environ, "RUNNER_ARTIFACTS_DIR": str(artifacts)}
    done = run_runner(
        "experiment=hri_calibration", "bootstrap=fast", "progress=false", env=env, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]

    env = {
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
    }
    store = f"sqlite:///{artifacts / 'mlflow.db'}"
    with mlflow_server(store, artifacts / "mlruns", env, startup_s=120) as base:
        name = urllib.parse.quote("hri_calibration")
        exp = get_json(f"{base}/api/2.0/mlflow/experiments/get-by-name?experiment_name={name}")
        exp_id = exp["experiment"]["experiment_id"]
        req = urllib.request.Request(
            f"{base}/api/2.0/mlflow/runs/search",
            data=json.dumps({"experiment_ids": [exp_id]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            (found,) = json.loads(resp.read())["runs"]
        info = found["info"]
        tags = {t["key"]: t["value"] for t in found["data"]["tags"]}
        run_dir = Path(tags["output_dir"])
        study_seconds = json.loads((run_dir / "runtime.json").read_text())["study_seconds"]
        duration = (int(info["end_time"]) - int(info["start_time"])) / 1000
        assert info["status"] == "FINISHED"
        assert info["run_name"] == "hri_calibration bootstrap=fast"
        # The run opens before the data load, so its Duration holds the whole study (no
        # absolute bound: how long the study takes depends on the machine).
        assert study_seconds > 0
        assert duration >= study_seconds
        (dataset_input,) = found["inputs"]["dataset_inputs"]
        digest = dataset_input["dataset"]["digest"]
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["dataset"]["fingerprint"].startswith(digest)

        for attempt in range(3):  # the page renders its table once the search has answered
            text = render(f"{base}/#/experiments/{exp_id}/runs", tmp_path, f"runs{attempt}")
            if "hri_calibration bootstrap=fast" in text:
                break
        assert "hri_calibration bootstrap=fast" in text, text[:2000]
        assert "Dataset" in text and "Duration" in text
        row = text[text.index("hri_calibration bootstrap=fast") :]
        assert f"factbench ({digest})" in row
        shown = re.search(re.escape(digest) + r"\).*?(\d+(?:\.\d+)?)\s?(ms|s|min|h)\b", row)
        assert shown is not None, row[:500]
        assert seconds(*shown.groups()) == pytest.approx(duration, abs=0.1 + 0.01 * duration)
        screenshot = tmp_path / f"runs{attempt}.png"
        assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert screenshot.stat().st_size > 20_000  # a rendered page, not a blank image
