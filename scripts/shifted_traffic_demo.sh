#!/usr/bin/env bash
# The contract watched in production, on real data: fit a risk-controlled gate on two
# RAGTruth tasks, route the third (traffic the guarantee's assumption does not cover),
# audit every accepted row. route flags the shift (summary.json `shift`, tag shift_flagged);
# the audit's running test raises its alarm (audit.json `sequential`, tag audit_alarm).
# Then the same with traffic like the calibration rows (half of the contexts each way):
# no flag. Everything goes under $OUT (default /tmp/shifted_traffic_demo).
#   bash scripts/shifted_traffic_demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-/tmp/shifted_traffic_demo}
export RUNNER_DATA_DIR=${RUNNER_DATA_DIR:-$(cd .. && pwd)/shared/data}
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_DISABLE_TELEMETRY=true
mkdir -p "$OUT"
$PY scripts/ragtruth_to_rag_file.py --split test --out "$OUT/test.jsonl"
$PY - "$OUT" <<'PY'
import json, random, sys
out = sys.argv[1]
rows = [json.loads(line) for line in open(f"{out}/test.jsonl")]
groups = sorted({r["group"] for r in rows})
random.Random(0).shuffle(groups)
half = set(groups[: len(groups) // 2])
files = {k: open(f"{out}/{k}.jsonl", "w") for k in ("shift_cal", "shift_route", "like_cal", "like_route")}
for r in rows:
    files["shift_route" if r["source"] == "Summary" else "shift_cal"].write(json.dumps(r) + "\n")
    files["like_cal" if r["group"] in half else "like_route"].write(json.dumps(r) + "\n")
PY
for case in shift like; do
  A="$OUT/$case/artifacts"
  $PY -m runner experiment=fit_gate dataset.path="$OUT/${case}_cal.jsonl" paths.artifacts_dir="$A" \
    progress=false routing.accept_rule=risk_controlled routing.max_accepted_risk=0.1 \
    routing.model_name="demo_$case" | tail -4
  $PY -m runner experiment=route dataset.path="$OUT/${case}_route.jsonl" paths.artifacts_dir="$A" \
    progress=false routing.model_uri="models:/demo_$case@champion" routing.audit_fraction=1.0 \
    | grep -A4 "moved from the calibration"
  $PY - "$A" "$OUT/${case}_route.jsonl" <<'PY'
import json, sys
import pandas as pd
artifacts, source = sys.argv[1], sys.argv[2]
decisions = pd.read_parquet(f"{artifacts}/route/latest/decisions.parquet")
labels = {json.loads(line)["id"]: json.loads(line)["label"] for line in open(source)}
with open(f"{artifacts}/audit_labels.jsonl", "w") as out:
    for i in decisions.loc[decisions["audit"], "id"]:
        out.write(json.dumps({"id": i, "label": labels[i]}) + "\n")
PY
  $PY -m runner experiment=audit paths.artifacts_dir="$A" progress=false \
    dataset.decisions="$A/route/latest/decisions.parquet" dataset.labels="$A/audit_labels.jsonl" \
    | grep -B1 -A4 "running test"
done
