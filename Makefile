# Commands of the runner. `make setup && make reproduce` runs every study; `make test` tests.
SHELL := /bin/bash
PY ?= .venv/bin/python
PIP ?= .venv/bin/pip
SHARED_DATA := $(abspath ../shared/data)
export RUNNER_DATA_DIR ?= $(if $(wildcard $(SHARED_DATA)),$(SHARED_DATA),)
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export MLFLOW_DISABLE_TELEMETRY ?= true
export MLFLOW_SERVER_ENABLE_JOB_EXECUTION ?= false
UI_PORT ?= 5000
# llama.cpp (the openai_compatible judge test's server) is built portable: AVX2, no
# -march=native. A native build on a CPU that advertises AMX emits tile instructions that
# fault where the kernel has not enabled AMX state (a VM), and a wheel built for one
# machine's CPU may not run on another's. `setup` passes --no-cache-dir so a wheel pip
# cached from an earlier native build is never reused.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

STUDIES := rq1_cheap_signals rq2_grouped_cv rq3_operating_points rq4_verifier_cost \
           rq5_source_shift rq5_source_shift_row_cv hri_example hri_calibration \
           hri_predicted claims_verification

.PHONY: setup test test-fast test-durations reproduce tables ui services services-stop services-status slurm slurm-stop bench traffic guarantee train-detector detector-errors detector-fusion detector-eval detector-curve detector-studies hashes \
        lint format clean $(STUDIES)

setup:  ## the system packages the tests need (root or sudo), then .venv with the project's pins
	@if ! command -v apt-get >/dev/null; then \
	  echo "make setup: no apt-get here: install chromium, chromium-driver, postgresql, slurm-wlm and munge yourself, make test needs them (scripts/ci_system_deps.sh says why)"; \
	elif ! bash scripts/ci_system_deps.sh; then \
	  echo "make setup: the system packages are not installed (above); going on with .venv, but make test needs them: run scripts/ci_system_deps.sh as root"; \
	fi
	python3.11 -m venv .venv || python3 -m venv .venv
	$(PIP) install --upgrade pip
	$(PIP) install torch==2.13.0
	$(PIP) install -e '.[dev]'
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 \
	  $(PIP) install --no-cache-dir -e '.[dev,server]'
	$(PIP) install --no-deps -r requirements-nodeps.txt

# Test order: pytest-randomly shuffles the test modules and the tests in each, and before
# every test reseeds `random` and numpy's global generator from the seed and the test's name,
# so a test that passes only after (or without) another one shows up. The seed is the
# commit's (its first 8 hex digits as a number): each new commit runs a new order, and a
# rerun of one commit (CI) runs the same order, so no run passes or fails by the luck of its
# order. The suite runs as JOBS pytest processes side by side (scripts/test_shards.py), each
# on a shard of the test files fixed before anything runs (tests/shards.py, weighed by
# tests/durations.json), so a rerun puts the same tests in the same process in the same
# order. The seed is printed first, and again on a failure: `make test SEED=N` replays that
# order exactly (or `pytest --randomly-seed=N --shard=K/2` one shard of it); `make test
# SEED=$$RANDOM` tries a new one; `make test JOBS=1` runs one process.
SEED ?= $(shell h=$$(git rev-parse --short=8 HEAD 2>/dev/null) && echo $$((16#$$h)) || echo 0)
JOBS ?= 2

test:  ## the whole test suite in JOBS shards, shuffled by SEED (what .ci/run calls); "no tests collected" is a failure
	@echo "test order: --randomly-seed=$(SEED) in $(JOBS) shard(s) (make test SEED=$(SEED) replays it)"
	@$(PY) scripts/test_shards.py --jobs $(JOBS) --seed $(SEED); rc=$$?; \
	if [ $$rc -ne 0 ]; then echo "failed in the order of --randomly-seed=$(SEED): make test SEED=$(SEED) replays it"; fi; \
	exit $$rc

test-fast:  ## skip the tests marked slow (real data, real models, subprocesses, servers, browsers)
	@echo "test order: --randomly-seed=$(SEED) in $(JOBS) shard(s) (make test-fast SEED=$(SEED) replays it)"
	@$(PY) scripts/test_shards.py --jobs $(JOBS) --seed $(SEED) -- -m "not slow"

test-durations:  ## run the whole suite and record each test's seconds (tests/durations.json: how the shards are balanced)
	@$(PY) scripts/test_shards.py --jobs $(JOBS) --seed $(SEED) --record tests/durations.json

$(STUDIES):
	$(PY) -m runner experiment=$@

reproduce: $(STUDIES) tables  ## every study, then every table and figure

tables:  ## re-render tables, figures and REPRODUCTION.md from logged outputs (no recompute)
	$(PY) scripts/render_tables.py

ui:  ## MLflow UI on 127.0.0.1 over the SQLite backend
	$(PY) -m mlflow server --backend-store-uri sqlite:///$(abspath artifacts)/mlflow.db \
	  --default-artifact-root $(abspath artifacts)/mlruns --host 127.0.0.1 --port $(UI_PORT) --workers 1

services:  ## local stack on 127.0.0.1: PostgreSQL, mlflow server over it, Ray head (docs/scale_out.md)
	PY=$(abspath $(PY)) bash scripts/services.sh start

services-stop:  ## stop everything `make services` and `make slurm` started, each by its PID
	PY=$(abspath $(PY)) bash scripts/services.sh stop

services-status:  ## what runs where
	PY=$(abspath $(PY)) bash scripts/services.sh status

slurm:  ## one-node Slurm on 127.0.0.1 (munged, slurmctld, slurmd) for hydra/launcher=submitit_slurm
	PY=$(abspath $(PY)) bash scripts/services.sh start slurm

slurm-stop:  ## cancel its jobs, stop slurmd, slurmctld and munged, each by its PID
	PY=$(abspath $(PY)) bash scripts/services.sh stop slurm

bench:  ## cost benchmarks: ratios against a baseline measured in the same process
	$(PY) scripts/bench_features.py
	$(PY) scripts/bench_gates.py
	$(PY) scripts/bench_training.py --out artifacts/bench/training.json   # detector steps/s and rows per hour, before and after (~2 min)
	$(PY) scripts/bench_floor.py --out artifacts/bench/floor.json   # tokenise -> features -> gate -> route, 1 and 2 workers; new documents (~3.5 min)
	$(PY) scripts/bench_routing.py --out artifacts/bench/routing.json   # pyfunc vs raw gate
	$(PY) scripts/bench_traces.py --traces 1000 \
		--out artifacts/bench/traces.json   # read -> route -> write-back on traces; scorer vs raw gate
	$(PY) scripts/bench_verifiers.py --verifiers deberta_nli --sample 48 --repeats 3 \
		--out artifacts/bench/verifiers_deberta_nli.json   # ~8 min on 2 cores
	$(PY) scripts/bench_verifiers.py --verifiers hhem_full lettucedetect --sample 24 --repeats 2 \
		--out artifacts/bench/verifiers_hhem_lettucedetect.json   # ~15 min on 2 cores
	$(PY) scripts/bench_judges.py --claims 24 --chunk 8 \
		--out artifacts/bench/judges.json   # both SmolLM2 setups: the path as filed, today's settings alone, the study's path (~11 min)
	$(PY) scripts/bench_route_stream.py --sizes 100000 1000000 --engines inmemory local ray1 ray2 \
		--out artifacts/bench/route_stream.json   # route at scale: rows/s, peak RSS (~1.5 h on 2 cores)

ROWS ?= 1000000
traffic:  ## generated traffic for route (RAGTruth test resampled): make traffic ROWS=1000000
	$(PY) scripts/make_traffic.py --rows $(ROWS) --out artifacts/traffic/$(ROWS)

lint:  ## ruff check + format check + the import contracts of docs/architecture.md + no import cycle + no unused public name
	$(PY) -m ruff check src tests scripts
	$(PY) -m ruff format --check src tests scripts
	.venv/bin/lint-imports --no-cache
	$(PY) scripts/check_imports.py
	$(PY) scripts/dead_code.py

format:
	$(PY) -m ruff format src tests scripts
	$(PY) -m ruff check --fix src tests scripts

clean:
	rm -rf artifacts/* .pytest_cache .ruff_cache
	touch artifacts/.gitkeep

hashes:  ## every study into a fresh folder, sha256 of its outputs (~50 min): make hashes COMPARE=artifacts/hashes/<old>.json
	$(PY) scripts/study_hashes.py --out artifacts/hashes/$$(git rev-parse --short HEAD).json \
		$(if $(COMPARE),--compare $(COMPARE),)

train-detector:  ## train the local detector (MiniLM-L6, sentence recipe, all of RAGTruth train), register models:/ragtruth_detector@champion (25-50 min on 2 cores, by CPU)
	$(PY) -m runner experiment=train_detector

detector-errors:  ## where the registered detector fails on its validation rows: by task, hallucination type, span length, position; its worst misses
	$(PY) scripts/detector_errors.py --model models:/ragtruth_detector@champion --out artifacts/detector_errors

detector-fusion:  ## sentence-level fusion against response-level stacking on RAGTruth test, out of fold (~12 min)
	$(PY) scripts/detector_fusion.py --model models:/ragtruth_detector@champion --out artifacts/detector_fusion

detector-eval:  ## the registered detector on RAGTruth test: gates fitted on train, int8, stacked gate, spans (~15 min)
	$(PY) -m runner experiment=detector_eval

detector-curve:  ## learning curve: held-out AUROC/AP against training examples, a figure (~80 min on 2 cores)
	$(PY) scripts/detector_learning_curve.py --sizes 250 500 1000 2000 \
		--reference models:/ragtruth_detector@champion --eval-rows 600 --out artifacts/detector_curve

guarantee:  ## the contract's bound checked: on RAGTruth train + test as the population, 200 grouped splits, task and HaluBench source shift, the calibrated cascade (~25 min)
	$(PY) -m runner experiment=guarantee_check
	$(PY) -m runner experiment=guarantee_check_halubench
	$(PY) -m runner experiment=guarantee_check_cascade

detector-studies:  ## the trained detector as a row of RQ4, S1 of the claim study and of hri_predicted
	$(PY) -m runner experiment=rq4_verifier_cost_detector
	$(PY) -m runner experiment=claims_verification_detector study.params.limit=null
	$(PY) -m runner experiment=hri_predicted_detector
