"""Judge cost benchmark: the path timed when the issue was filed against today's study path.

Why: the claim study's cost is its LLM judges. A speed-up is only meaningful against a
baseline measured in the same process, on the same claims, with the same timer, together
with how many verdicts move. This script takes one seeded, label-stratified sample of WiCE
test claims (the study's own sampler) and the study's judge setups (the two SmolLM2-135M
setups by default, read from ``conf/judge/``), loads the model once (not timed), and times
three paths on the same claims:

- ``filed``: the path the issue timed (19-21 s per claim per setup): every setup on its own,
  one claim at a time (`LLMJudge.judge`, one ``generate`` call per answer, nothing shared),
  with the prompt and budget the setups had then (``reason_then_json``, 48 first-answer
  tokens, no prefix reuse; `FILED_SETTINGS`);
- ``today``: the same one-claim-at-a-time, nothing-shared path with today's settings, so the
  gain from sharing alone is visible and verdicts can be compared like for like;
- ``new``: the study's own path, `runner.claims.verifier_runs.judge_units` with one
  in-memory `AnswerCache` shared by the setups (no disk cache, so nothing comes from an
  earlier run): each distinct first answer is computed once, a repair starts from the kept
  keys/values of its prompt and first answer, prompts are batched ``batch_size`` at a time.

The claims are split into chunks of ``--chunk`` claims and the paths take turns per chunk in
a rotating order, so a change in machine load hits all alike. Reported: seconds per claim
(all setups together) of each path, the ratios ``filed/new`` (the issue's target >= 4x) and
``today/new``, and the (claim, setup) verdicts that differ between ``today`` and ``new``
(same prompt and decoding, so expected 0 under greedy decoding: the only source of a
difference is float rounding from other matrix shapes, a kept prefix or a padded batch,
flipping a near-tie) and between ``filed`` and ``new`` (different prompts: these differences
are the prompt change, counted, not a fault).

Usage::

    python scripts/bench_judges.py                         # 24 claims, chunks of 8
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

import pandas as pd  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from hydra.utils import instantiate  # noqa: E402

from runner.claims import (  # noqa: E402
    judge_units,
    select_claims,
)
from runner.claims.judges import AnswerCache  # noqa: E402
from runner.config import register_configs  # noqa: E402
from runner.data import load_wice  # noqa: E402
from runner.paths import PROJECT_ROOT, artifacts_dir  # noqa: E402

log = logging.getLogger("bench_judges")

FILED_SETTINGS = {"prompt": "reason_then_json", "max_new_tokens": 48, "reuse_prefix": False}
"""What the SmolLM2 setups were when the issue was filed (git show e77e9d9^:conf/judge/)."""

PATHS = ("filed", "today", "new")


def judge_setups(
    batch_size: int | None, overrides: list[str], settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The claim study's judges, built from the shipped config (plus ``overrides``), with
    ``settings`` replacing fields of every judge node."""
    register_configs()
    with initialize_config_dir(str(PROJECT_ROOT / "conf"), version_base=None):
        cfg = compose("config", ["experiment=claims_verification", *overrides])
    judges = {}
    for name, node in cfg.judges.items():
        if batch_size is not None:
            node.batch_size = batch_size
        for key, value in (settings or {}).items():
            node[key] = value
        judges[name] = instantiate(node, _convert_="all")
    return judges


def run_alone(judges: dict[str, Any], items: list[tuple]) -> dict[str, list]:
    """Every setup on its own, one claim at a time, nothing shared."""
    return {name: [j.judge(*item) for item in items] for name, j in judges.items()}


def run_study_path(judges: dict[str, Any], items: list[tuple]) -> dict[str, list]:
    """The claim study's path: setups take turns on each claim, one in-memory cache."""
    units = pd.DataFrame(items, columns=["question", "claim", "passages"])
    return judge_units(judges, units, progress=False, cache=AnswerCache())


def differences(
    ids: list[str], names: list[str], a: dict[str, list], b: dict[str, list], tags: tuple
) -> list[dict[str, Any]]:
    """The (claim, setup) pairs whose verdict (label, abstention, parsed label) differs."""
    out = []
    for name in names:
        for cid, x, y in zip(ids, a[name], b[name], strict=True):
            if (x.label, x.abstained, x.parsed_label) != (y.label, y.abstained, y.parsed_label):
                out.append(
                    {
                        "claim_id": cid,
                        "judge": name,
                        tags[0]: [x.label, x.abstained, x.outputs],
                        tags[1]: [y.label, y.abstained, y.outputs],
                    }
                )
    return out


def repaired_share(verdicts: dict[str, list]) -> dict[str, float]:
    """Per setup, the share of verdicts that needed a repair (a second answer)."""
    return {
        name: round(sum(len(v.outputs) > 1 for v in vs) / max(len(vs), 1), 3)
        for name, vs in verdicts.items()
    }


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
    setups = {
        "filed": judge_setups(args.batch_size, args.set, FILED_SETTINGS),
        "today": judge_setups(args.batch_size, args.set),
        "new": judge_setups(args.batch_size, args.set),
    }
    for judges in setups.values():
        for j in judges.values():
            j.load()  # one load, shared by every setup of the model (not timed)
    names = list(setups["new"])
    started_load = os.getloadavg()
    seconds = dict.fromkeys(PATHS, 0.0)
    verdicts: dict[str, dict[str, list]] = {p: {n: [] for n in names} for p in PATHS}
    starts = range(0, len(items), args.chunk)
    chunks = [list(range(i, min(i + args.chunk, len(items)))) for i in starts]
    for k, chunk in enumerate(tqdm(chunks, desc="chunks (all paths)", unit="chunk")):
        part = [items[i] for i in chunk]
        for path in PATHS[k % 3 :] + PATHS[: k % 3]:
            run = run_study_path if path == "new" else run_alone
            t0 = time.perf_counter()
            out = run(setups[path], part)
            seconds[path] += time.perf_counter() - t0
            for name, vs in out.items():
                verdicts[path][name].extend(vs)
    same = differences(ids, names, verdicts["today"], verdicts["new"], ("today", "new"))
    prompt = differences(ids, names, verdicts["filed"], verdicts["new"], ("filed", "new"))
    n = len(items)

    def ratio(a: str, b: str) -> float | None:
        return round(seconds[a] / seconds[b], 3) if seconds[b] else None

    report = {
        "claims": n,
        "claim_ids": ids,
        "judges": {name: j.describe() for name, j in setups["new"].items()},
        "filed_settings": FILED_SETTINGS,
        "torch_threads": torch.get_num_threads(),
        "load_average_start": started_load,
        "load_average_end": os.getloadavg(),
        "seconds_per_claim": {p: round(s / n, 3) for p, s in seconds.items()},
        "ratio": ratio("filed", "new"),
        "ratio_today_vs_new": ratio("today", "new"),
        "target_ratio": 4.0,
        "verdict_differences": len(same),
        "differences": same,
        "verdict_differences_filed_vs_new": len(prompt),
        "differences_filed_vs_new": prompt,
        "repaired_share": {p: repaired_share(verdicts[p]) for p in PATHS},
        "new_path_stats": {name: j.stats.to_dict() for name, j in setups["new"].items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    log.info(
        "judges: filed %.2f, today %.2f, new %.2f s/claim; filed/new %.2fx (target >= 4x), "
        "today/new %.2fx; verdicts differing today vs new %d, filed vs new %d (prompt "
        "change); report %s",
        report["seconds_per_claim"]["filed"],
        report["seconds_per_claim"]["today"],
        report["seconds_per_claim"]["new"],
        report["ratio"] or float("nan"),
        report["ratio_today_vs_new"] or float("nan"),
        len(same),
        len(prompt),
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
