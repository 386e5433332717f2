"""Judge cost benchmark: the one-claim-at-a-time path against the shared, batched one.

Why: the claim study's cost is its LLM judges. A speed-up is only meaningful against a
baseline measured in the same process, on the same claims, with the same timer, together
with how many verdicts move. This script takes one seeded, label-stratified sample of WiCE
test claims (the study's own sampler) and the study's judge setups (the two SmolLM2-135M
setups by default, read from ``conf/judge/``), loads the model once, and times:

- ``today``: every judge setup on its own, one claim at a time (`LLMJudge.judge`): a first
  answer per setup, then its repair, each a separate ``generate`` call;
- ``new``: `LLMJudge.judge_many` over the same claims with one in-memory
  `runner.claims.judges.cache.AnswerCache` shared by the setups (no disk cache, so nothing
  comes from an earlier run): each distinct first answer is computed once, prompts are
  batched ``--batch-size`` at a time (left-padded, shortest first).

The claims are split into chunks of ``--chunk`` claims and the two paths alternate per
chunk (today-new, new-today, ...), so a change in machine load hits both alike. Reported:
seconds per claim (all setups together) of each path, their ratio (target >= 4x), and the
number of (claim, setup) verdicts that differ, with the claims named. Under greedy decoding
the only source of a difference is batching: a left-padded batch computes the same
function with other matrix shapes, so float32 rounding can differ in the last bits and
flip a near-tie between two next tokens.

Usage::

    python scripts/bench_judges.py                         # 24 claims, batch size 4
    python scripts/bench_judges.py --claims 8 --chunk 4 --batch-size 2
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from runner.env import apply_offline_defaults

apply_offline_defaults()

from hydra import compose, initialize_config_dir  # noqa: E402
from hydra.utils import instantiate  # noqa: E402

from runner.claims.judges.cache import AnswerCache  # noqa: E402
from runner.claims.sampling import select_claims  # noqa: E402
from runner.config import register_configs  # noqa: E402
from runner.data.claims import load_wice  # noqa: E402
from runner.paths import PROJECT_ROOT, artifacts_dir  # noqa: E402

log = logging.getLogger("bench_judges")


def judge_setups(batch_size: int | None, overrides: list[str]) -> dict[str, Any]:
    """The claim study's judges, built from the shipped config (plus ``overrides``)."""
    register_configs()
    with initialize_config_dir(str(PROJECT_ROOT / "conf"), version_base=None):
        cfg = compose("config", ["experiment=claims_verification", *overrides])
    judges = {}
    for name, node in cfg.judges.items():
        if batch_size is not None:
            node.batch_size = batch_size
        judges[name] = instantiate(node, _convert_="all")
    return judges


def run_today(judges: dict[str, Any], items: list[tuple]) -> dict[str, list]:
    """Every setup on its own, one claim at a time, nothing shared."""
    return {name: [j.judge(*item) for item in items] for name, j in judges.items()}


def run_new(judges: dict[str, Any], items: list[tuple]) -> dict[str, list]:
    """`judge_many` with one in-memory cache shared by the setups (batched where set)."""
    cache = AnswerCache()
    return {name: j.judge_many(items, cache=cache) for name, j in judges.items()}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; write the JSON report; return 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--claims", type=int, default=24, help="WiCE test claims (stratified)")
    ap.add_argument("--chunk", type=int, default=8, help="claims per interleaved chunk")
    ap.add_argument("--batch-size", type=int, default=None, help="default: the judge config")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--set", action="append", default=[], help="extra Hydra override")
    ap.add_argument("--out", type=Path, default=artifacts_dir() / "bench" / "judges.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    import torch
    from tqdm.auto import tqdm

    data = load_wice(split="test")
    claims = select_claims(data.frame, args.claims, "stratified", args.seed)
    items = list(zip(claims["question"], claims["claim"], claims["passages"], strict=True))
    ids = claims["claim_id"].tolist()
    judges = judge_setups(args.batch_size, args.set)
    for j in judges.values():
        j.load()  # one load, shared by the setups (not timed)
    started_load = os.getloadavg()
    seconds = {"today": 0.0, "new": 0.0}
    verdicts: dict[str, dict[str, list]] = {"today": {}, "new": {}}
    starts = range(0, len(items), args.chunk)
    chunks = [list(range(i, min(i + args.chunk, len(items)))) for i in starts]
    for k, chunk in enumerate(tqdm(chunks, desc="chunks (both paths)", unit="chunk")):
        part = [items[i] for i in chunk]
        order = ("today", "new") if k % 2 == 0 else ("new", "today")
        for path in order:
            t0 = time.perf_counter()
            out = run_today(judges, part) if path == "today" else run_new(judges, part)
            seconds[path] += time.perf_counter() - t0
            for name, vs in out.items():
                verdicts[path].setdefault(name, []).extend(vs)
    differences = []
    for name in judges:
        for cid, a, b in zip(ids, verdicts["today"][name], verdicts["new"][name], strict=True):
            if (a.label, a.abstained, a.parsed_label) != (b.label, b.abstained, b.parsed_label):
                differences.append(
                    {
                        "claim_id": cid,
                        "judge": name,
                        "today": [a.label, a.abstained, a.outputs],
                        "new": [b.label, b.abstained, b.outputs],
                    }
                )
    n = len(items)
    report = {
        "claims": n,
        "claim_ids": ids,
        "judges": {name: j.describe() for name, j in judges.items()},
        "torch_threads": torch.get_num_threads(),
        "load_average_start": started_load,
        "load_average_end": os.getloadavg(),
        "seconds_per_claim": {p: round(s / n, 3) for p, s in seconds.items()},
        "ratio": round(seconds["today"] / seconds["new"], 3) if seconds["new"] else None,
        "target_ratio": 4.0,
        "verdict_differences": len(differences),
        "differences": differences,
        "new_path_stats": {name: j.stats.to_dict() for name, j in judges.items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    log.info(
        "judges: today %.2f s/claim, new %.2f s/claim, ratio %.2fx (target >= 4x), "
        "%d verdict differences; report %s",
        report["seconds_per_claim"]["today"],
        report["seconds_per_claim"]["new"],
        report["ratio"] or float("nan"),
        len(differences),
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
