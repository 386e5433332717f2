#!/usr/bin/env bash
# The default detector recipe at GPU scale, trained and evaluated in one go (issue 43, item 7).
#
# Why a script: a GPU hour buys what the CPU default cannot (every sentence pair of RAGTruth
# train, a 256-token window, every layer trained, three epochs), and a lent GPU comes with a
# few minutes of device time; this is the one command to spend them on. The CPU default
# (`make train-detector`) is unchanged and no test needs a GPU.
#
#   bash scripts/device_detector.sh                 # on a machine with CUDA torch and a GPU
#   EPOCHS=2 MAX_LENGTH=192 bash scripts/device_detector.sh
#
# It writes the same cards and cells as the CPU run (artifacts/train_detector/latest,
# artifacts/detector_eval/latest, MLflow), and registers the model as a version of
# ragtruth_detector; @champion moves only by the promotion rule (docs/detector.md).
# Needs: the project's environment with a CUDA build of torch (`pip install torch` from the
# CUDA index instead of the CPU pin), RUNNER_DATA_DIR with RAGTruth (or the Hub).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
EPOCHS=${EPOCHS:-3}
MAX_LENGTH=${MAX_LENGTH:-256}
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TRANSFORMERS_OFFLINE=${TRANSFORMERS_OFFLINE:-1}
export HF_DATASETS_OFFLINE=${HF_DATASETS_OFFLINE:-1} MLFLOW_DISABLE_TELEMETRY=true
export RUNNER_DATA_DIR=${RUNNER_DATA_DIR:-../shared/data}

"$PY" - <<'PY'
import sys, torch
if not torch.cuda.is_available():
    sys.exit("error: scripts/device_detector.sh needs a CUDA GPU and a CUDA build of torch "
             f"(torch {torch.__version__} sees none); the CPU recipe is `make train-detector`")
print("GPU:", torch.cuda.get_device_name(0))
PY

start=$(date +%s)
"$PY" -m runner experiment=train_detector train.device=cuda \
  train.max_examples=null train.negatives_per_positive=null train.epochs="$EPOCHS" \
  train.batch_size=64 train.eval_batch_size=256 train.eval_every=null \
  detector.max_length="$MAX_LENGTH" detector.freeze_layers=0
version=$("$PY" -c 'import json; print(json.load(open("artifacts/train_detector/latest/registered_model.json"))["version"])')
echo "trained models:/ragtruth_detector/$version in $(( $(date +%s) - start )) s"
"$PY" -m runner experiment=detector_eval verifiers.detector.model="models:/ragtruth_detector/$version" \
  verifiers.detector.device=cuda verifiers.detector.batch_size=128 verifiers.detector.threads=null \
  study.params.int8=false   # int8 dynamic quantisation is a CPU path: `make detector-eval` measures it
echo "trained and evaluated in $(( $(date +%s) - start )) s"
