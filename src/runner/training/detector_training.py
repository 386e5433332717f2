"""Train a token-classification hallucination detector: LettuceDetect's recipe, any encoder.

Why its own module: the recipe (token labels from gold spans, prompt tokens ignored,
AdamW, best checkpoint on a held-out split) must run on a 2-core CPU within an hour and
survive being killed, so the loop is small and explicit:

- inputs: `runner.verifiers.detector_inputs` (the same rule the verifier scores with);
  answer tokens get 0/1 from `runner.verifiers.token_labels`, prompt and special tokens
  -100 (ignored by the loss);
- batches: dynamic padding within length buckets (a seeded shuffle, then pools of
  ``pool_batches`` batches sorted by length, cut into batches, batch order shuffled), so
  a batch pads to similar lengths and the order depends only on the seed and the epoch;
- checkpoints: every ``checkpoint_every`` steps the weights, optimiser, schedule, RNG
  states, step, history and elapsed time go to ``<out>/checkpoint`` (written to a temporary
  folder and renamed, so a kill never leaves half a checkpoint). A rerun resumes there;
  because the batch order is a function of (seed, epoch) and every state is restored, the
  resumed run ends with the same weights as an uninterrupted one;
- ``time_budget_min`` stops at the first step boundary past the budget (time of earlier
  attempts included), evaluates, and keeps the best evaluated weights;
- evaluation on the validation split every ``eval_every`` steps and at each epoch's end:
  response-level AUROC/AP of the max token probability (the verifier's risk) and token
  F1 at 0.5 (LettuceDetect's selection measure); the best by ``select_by`` is kept in
  ``<out>/best``.
"""

from __future__ import annotations

import logging
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from runner.errors import ConfigError
from runner.settings import SEED
from runner.verifiers import InputRule, Segments, build_segments, gold_spans, pad, token_labels

log = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "cuda")
SELECT_BY = ("ap", "auroc", "token_f1")
IGNORE = -100


@dataclass(frozen=True)
class TrainSettings:
    """Optimisation settings of one training run.

    Attributes
    ----------
    epochs : int
    batch_size : int
    lr : float
        AdamW peak learning rate (linear warm-up, then linear decay to 0).
    weight_decay : float
    warmup_share : float
        Share of all steps spent warming up.
    time_budget_min : float or None
        Stop at the first step past this many minutes of training (all attempts).
    checkpoint_every : int
        Steps between resumable checkpoints.
    eval_every : int or None
        Steps between validation passes (None: only at each epoch's end and at the stop).
    select_by : {"ap", "auroc", "token_f1"}
        Validation measure that picks the kept weights.
    pool_batches : int
        Batches per length bucket.
    device : {"auto", "cpu", "cuda"}
    threads : int or None
        torch intra-op threads (None: torch's default).
    eval_batch_size : int
    seed : int
    """

    epochs: int = 1
    batch_size: int = 16
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup_share: float = 0.06
    time_budget_min: float | None = None
    checkpoint_every: int = 50
    eval_every: int | None = None
    select_by: str = "ap"
    pool_batches: int = 32
    device: str = "auto"
    threads: int | None = None
    eval_batch_size: int = 32
    seed: int = SEED

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise ConfigError(f"train.device {self.device!r} not in {DEVICES}")
        if self.select_by not in SELECT_BY:
            raise ConfigError(f"train.select_by {self.select_by!r} not in {SELECT_BY}")
        for name in ("epochs", "batch_size", "checkpoint_every", "pool_batches", "eval_batch_size"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"train.{name} must be >= 1, got {getattr(self, name)}")
        if self.eval_every is not None and self.eval_every < 1:
            raise ConfigError(f"train.eval_every must be >= 1 or null, got {self.eval_every}")
        if not self.lr > 0:
            raise ConfigError(f"train.lr must be > 0, got {self.lr}")
        if self.time_budget_min is not None and not self.time_budget_min > 0:
            raise ConfigError(f"train.time_budget_min must be > 0, got {self.time_budget_min}")


@dataclass
class LabelledSegments:
    """Model inputs with token labels (-100 where the loss ignores the token)."""

    segments: Segments
    labels: list[np.ndarray]

    @property
    def lengths(self) -> np.ndarray:
        """Input length of every segment."""
        return self.segments.encoded.lengths()


@dataclass
class TrainResult:
    """What a training run leaves behind."""

    best_dir: Path
    best: dict[str, Any]
    history: list[dict[str, Any]]
    evaluations: list[dict[str, Any]]
    steps_done: int
    steps_planned: int
    stopped_by: str  # "completed" | "time_budget"
    train_seconds: float
    examples_seen: int
    resumed_from: int | None = None


def resolve_device(device: str) -> str:
    """``auto`` -> cuda when available, else cpu; ``cuda`` without a GPU is a ConfigError."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device=cuda but torch sees no CUDA device (use auto or cpu)")
    return device


def label_segments(tokenizer, rule: InputRule, frame: pd.DataFrame) -> LabelledSegments:
    """Inputs of every row of a frame with spans, and their 0/1/-100 token labels."""
    if "spans" not in frame.columns:
        raise ConfigError(
            "training a token detector needs answer spans: the data set's frame has no "
            "'spans' column (RAGTruth has one; a rag_file does not)"
        )
    segments = build_segments(
        tokenizer,
        rule,
        frame["question"].tolist(),
        frame["context"].tolist(),
        frame["answer"].tolist(),
        frame["example_id"].tolist(),
    )
    enc = segments.encoded
    spans = [
        gold_spans(list(s), a, str(i))
        for s, a, i in zip(frame["spans"], frame["answer"], frame["example_id"], strict=True)
    ]
    labels = []
    for k, owner in enumerate(segments.example_of):
        row = np.full(len(enc.input_ids[k]), IGNORE, dtype=np.int64)
        row[enc.answer_tokens[k]] = token_labels(enc.answer_offsets[k], spans[owner])
        labels.append(row)
    return LabelledSegments(segments, labels)


def epoch_batches(lengths: np.ndarray, batch_size: int, pool_batches: int, seed: int, epoch: int):
    """Length-bucketed batch order for one epoch: a function of (seed, epoch) only."""
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(lengths))
    pool = batch_size * pool_batches
    batches = []
    for start in range(0, len(order), pool):
        chunk = order[start : start + pool]
        chunk = chunk[np.argsort(-lengths[chunk], kind="stable")]
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def _tensors(data: LabelledSegments, rows: np.ndarray, pad_id: int, device: str, use_types: bool):
    import torch

    enc = data.segments.encoded
    ids, mask = pad([enc.input_ids[i] for i in rows], pad_id)
    labels, _ = pad([data.labels[i].tolist() for i in rows], IGNORE)
    out = {
        "input_ids": torch.from_numpy(ids).to(device),
        "attention_mask": torch.from_numpy(mask).to(device),
        "labels": torch.from_numpy(labels).to(device),
    }
    if use_types and enc.token_type_ids is not None:
        types, _ = pad([enc.token_type_ids[i] for i in rows], 0)
        out["token_type_ids"] = torch.from_numpy(types).to(device)
    return out


def predict_token_probs(
    model, data: LabelledSegments, pad_id: int, device: str, batch_size: int
) -> list[np.ndarray]:
    """P(hallucinated) of every answer token of every segment (input order)."""
    import torch

    enc = data.segments.encoded
    use_types = int(getattr(model.config, "type_vocab_size", 0) or 0) > 0
    out: list[np.ndarray | None] = [None] * len(enc.input_ids)
    order = np.argsort(-data.lengths, kind="stable")
    model.eval()
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            batch = _tensors(data, rows, pad_id, device, use_types)
            batch.pop("labels")
            probs = torch.softmax(model(**batch).logits.float(), dim=-1)[..., 1].cpu().numpy()
            for b, i in enumerate(rows):
                out[i] = probs[b, enc.answer_tokens[i]]
    return out  # type: ignore[return-value]


def evaluate(model, data: LabelledSegments, pad_id: int, device: str, batch_size: int) -> dict:
    """Validation measures: response AUROC/AP of max token probability, token F1 at 0.5."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    probs = predict_token_probs(model, data, pad_id, device, batch_size)
    owners = data.segments.example_of
    n = int(owners.max()) + 1 if len(owners) else 0
    risk = np.zeros(n)
    y = np.zeros(n, dtype=int)
    tp = fp = fn = 0
    for k, p in enumerate(probs):
        gold = data.labels[k][data.segments.encoded.answer_tokens[k]]
        owner = owners[k]
        risk[owner] = max(risk[owner], float(p.max()) if len(p) else 0.0)
        y[owner] |= int(gold.max()) if len(gold) else 0
        flag = p >= 0.5
        tp += int((flag & (gold == 1)).sum())
        fp += int((flag & (gold == 0)).sum())
        fn += int((~flag & (gold == 1)).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    both = len(set(y.tolist())) == 2
    return {
        "auroc": float(roc_auc_score(y, risk)) if both else float("nan"),
        "ap": float(average_precision_score(y, risk)) if both else float("nan"),
        "token_precision": precision,
        "token_recall": recall,
        "token_f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "n_examples": n,
    }


def _rng_state() -> dict:
    """The only global generator training draws from: torch's (dropout). Batch order and
    samples come from seeded `numpy.random.Generator`s, functions of (seed, epoch)."""
    import torch

    return {"torch": torch.get_rng_state()}


def _set_rng_state(state: dict) -> None:
    import torch

    torch.set_rng_state(state["torch"])


def _atomic_dir(target: Path, write: Callable[[Path], None]) -> None:
    """Write a folder through `write(tmp)` and swap it in whole."""
    tmp = target.with_name(target.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    write(tmp)
    old = target.with_name(target.name + ".old")
    if target.exists():
        target.rename(old)
    tmp.rename(target)
    if old.exists():
        shutil.rmtree(old)


def _recover(target: Path) -> None:
    """Finish a swap a kill interrupted: keep the complete folder."""
    old = target.with_name(target.name + ".old")
    if not target.exists() and old.exists():
        old.rename(target)
    elif old.exists():
        shutil.rmtree(old)


def _schedule(total: int, warmup: int) -> Callable[[int], float]:
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    return factor


def _better(value: float, best: float | None, first: bool) -> bool:
    """The first evaluation is always kept (so weights exist); later ones when better."""
    if first:
        return True
    return not math.isnan(value) and (best is None or math.isnan(best) or value > best)


def train(
    model,
    tokenizer,
    train_data: LabelledSegments,
    val_data: LabelledSegments,
    settings: TrainSettings,
    out_dir: Path,
    progress: bool = True,
    on_step: Callable[[int, float], None] | None = None,
    stop_after_steps: int | None = None,
    tensors: Callable[..., dict] | None = None,
    evaluate_fn: Callable[..., dict] | None = None,
) -> TrainResult:
    """Fine-tune `model` (an ``AutoModelForTokenClassification``) and keep the best weights.

    Parameters
    ----------
    model, tokenizer
        The backbone with a fresh 2-label head, and its fast tokenizer.
    train_data, val_data : LabelledSegments
    settings : TrainSettings
    out_dir : Path
        Holds ``checkpoint/`` (resumable state) and ``best/`` (kept weights +
        tokenizer). A folder with a checkpoint of the same plan resumes from it.
    progress : bool
        A progress bar with ETA.
    on_step : callable, optional
        Called with (step, loss) after every optimiser step (e.g. MLflow logging).
    stop_after_steps : int, optional
        Stop (without evaluating) after this many steps of this call: simulates a kill.
    tensors, evaluate_fn : callable, optional
        Another recipe's batch builder ``(data, rows, pad_id, device, use_types) -> dict``
        and validation ``(model, data, pad_id, device, batch_size) -> dict`` (with the
        ``select_by`` measure); default: this module's token-classification ones. The
        sentence recipe (`runner.training.sentence_training`) passes its own, so both
        recipes share one seeded, resumable loop.

    Returns
    -------
    TrainResult
    """
    import torch
    from tqdm.auto import tqdm

    tensors = tensors or _tensors
    evaluate_fn = evaluate_fn or evaluate
    device = resolve_device(settings.device)
    if settings.threads:
        torch.set_num_threads(int(settings.threads))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ckpt, best_dir = out_dir / "checkpoint", out_dir / "best"
    for folder in (ckpt, best_dir):
        _recover(folder)
    torch.manual_seed(settings.seed)
    model.to(device)
    pad_id = tokenizer.pad_token_id
    use_types = int(getattr(model.config, "type_vocab_size", 0) or 0) > 0
    per_epoch = math.ceil(len(train_data.labels) / settings.batch_size)
    total = per_epoch * settings.epochs
    plan = {"steps": total, "segments": len(train_data.labels), **asdict(settings)}
    plan.pop("time_budget_min")
    plan.pop("threads")
    no_decay = ("bias", "LayerNorm.weight", "norm.weight")
    groups = [
        {
            "params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)],
            "weight_decay": settings.weight_decay,
        },
        {
            "params": [p for n, p in model.named_parameters() if n.endswith(no_decay)],
            "weight_decay": 0.0,
        },
    ]
    optimizer = torch.optim.AdamW(groups, lr=settings.lr)
    warmup = round(settings.warmup_share * total)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(total, warmup))
    step, elapsed, history, evaluations, best = 0, 0.0, [], [], None
    resumed_from = None
    check_training_folder(out_dir)
    if (ckpt / "state.pt").is_file():
        state = _read_state(ckpt / "state.pt", out_dir)
        if state["plan"] != plan:
            raise ConfigError(
                f"{ckpt} holds a checkpoint of another training plan; use a new output "
                f"folder (or delete it to start over). Checkpoint: {state['plan']}, now: {plan}"
            )
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        _set_rng_state(state["rng"])
        step, elapsed = state["step"], state["elapsed"]
        history, evaluations, best = state["history"], state["evaluations"], state["best"]
        resumed_from = step
        log.info("resuming training at step %d of %d (%.1f min done)", step, total, elapsed / 60)

    def save_checkpoint() -> None:
        def write(tmp: Path) -> None:
            torch.save(
                {
                    "plan": plan,
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(),
                    "rng": _rng_state(),
                    "step": step,
                    "elapsed": elapsed,
                    "history": history,
                    "evaluations": evaluations,
                    "best": best,
                },
                tmp / "state.pt",
            )

        _atomic_dir(ckpt, write)

    def run_eval(reason: str) -> None:
        nonlocal best
        metrics = evaluate_fn(model, val_data, pad_id, device, settings.eval_batch_size)
        metrics.update(step=step, epoch=step / per_epoch, reason=reason)
        evaluations.append(metrics)
        log.info(
            "validation at step %d: AUROC %.3f AP %.3f token F1 %.3f",
            step, metrics["auroc"], metrics["ap"], metrics["token_f1"],
        )  # fmt: skip
        if _better(metrics[settings.select_by], None if best is None else best["value"],
                   best is None):  # fmt: skip
            best = {"value": metrics[settings.select_by], "step": step, **metrics}

            def write(tmp: Path) -> None:
                model.save_pretrained(tmp)
                tokenizer.save_pretrained(tmp)

            _atomic_dir(best_dir, write)
        model.train()

    budget = None if settings.time_budget_min is None else settings.time_budget_min * 60
    stopped_by = "completed"
    bar = tqdm(total=total, initial=step, disable=not progress, desc="train", unit="step")
    model.train()
    started = time.perf_counter() - elapsed
    this_call = 0
    lengths = train_data.lengths
    while step < total:
        epoch = step // per_epoch
        batches = epoch_batches(
            lengths, settings.batch_size, settings.pool_batches, settings.seed, epoch
        )
        for rows in batches[step - epoch * per_epoch :]:
            batch = tensors(train_data, rows, pad_id, device, use_types)
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            this_call += 1
            elapsed = time.perf_counter() - started
            value = float(loss.detach())
            history.append({"step": step, "loss": value, "lr": scheduler.get_last_lr()[0]})
            if on_step is not None:
                on_step(step, value)
            bar.update(1)
            bar.set_postfix(loss=f"{value:.3f}")
            at_epoch_end = step % per_epoch == 0
            if settings.eval_every and step % settings.eval_every == 0 and not at_epoch_end:
                run_eval("eval_every")
            if at_epoch_end:
                run_eval("epoch_end")
            if step % settings.checkpoint_every == 0 or at_epoch_end:
                save_checkpoint()
            if stop_after_steps is not None and this_call >= stop_after_steps:
                bar.close()
                save_checkpoint()
                return _result(best_dir, best, history, evaluations, step, total,
                               "interrupted", elapsed, settings, resumed_from)  # fmt: skip
            if budget is not None and elapsed >= budget and step < total:
                stopped_by = "time_budget"
                log.warning(
                    "train.time_budget_min=%g cut training short at step %d of %d: the kept "
                    "weights depend on this machine's speed (raise train.time_budget_min, or "
                    "lower train.max_examples, to stop by steps)",
                    settings.time_budget_min, step, total,
                )  # fmt: skip
                break
        if stopped_by == "time_budget":
            if not evaluations or evaluations[-1]["step"] != step:
                run_eval("time_budget")
            save_checkpoint()
            break
    bar.close()
    if best is None:  # no evaluation ran (e.g. a resumed, already finished plan)
        run_eval("final")
        save_checkpoint()
    return _result(best_dir, best, history, evaluations, step, total, stopped_by, elapsed,
                   settings, resumed_from)  # fmt: skip


def _unreadable(path: Path, out_dir: Path, exc: BaseException) -> ConfigError:
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    detail = detail.split(". ")[0].rstrip(".")  # torch appends paragraphs of advice
    return ConfigError(
        f"{path} cannot be read (truncated or corrupt: {detail}); to start this training "
        f"over, delete the folder {out_dir}"
    )


def _read_state(path: Path, out_dir: Path) -> dict:
    """A checkpoint's state, or one line naming the file when it cannot be read."""
    import torch

    try:
        state = torch.load(path, weights_only=False)
        missing = [k for k in ("plan", "model", "optimizer", "step", "best") if k not in state]
    except Exception as exc:  # truncated zip, foreign pickle, ...: all one answer
        raise _unreadable(path, out_dir, exc) from None
    if missing:
        raise _unreadable(path, out_dir, KeyError(f"no {', '.join(missing)}"))
    return state


def check_training_folder(out_dir: Path) -> None:
    """What an earlier attempt left in `out_dir` can be read, before any work is spent.

    The kept weights (``best/model.safetensors``) and the resumable state
    (``checkpoint/state.pt``): a file a full disk or a copy cut short left truncated is one
    line naming it and the folder to delete to start over, not a traceback after hours.
    """
    out_dir = Path(out_dir)
    best_dir = out_dir / "best"
    if best_dir.is_dir():
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        path = best_dir / "model.safetensors"
        if not path.is_file():
            raise _unreadable(path, out_dir, FileNotFoundError("the file is missing"))
        try:
            load_file(str(path))
        except (SafetensorError, OSError, ValueError) as exc:
            raise _unreadable(path, out_dir, exc) from None
    state = out_dir / "checkpoint" / "state.pt"
    if state.is_file():
        _read_state(state, out_dir)


def _result(best_dir, best, history, evaluations, step, total, stopped_by, elapsed, settings,
            resumed_from) -> TrainResult:  # fmt: skip
    return TrainResult(
        best_dir=best_dir,
        best=best or {},
        history=history,
        evaluations=evaluations,
        steps_done=step,
        steps_planned=total,
        stopped_by=stopped_by,
        train_seconds=elapsed,
        examples_seen=min(step * settings.batch_size, total * settings.batch_size),
        resumed_from=resumed_from,
    )


def choose_threshold(y: np.ndarray, risk: np.ndarray) -> dict[str, float]:
    """The example threshold with the best F1 on validation (ties: the higher threshold).

    A validation split with one class cannot choose: 0.5 (LettuceDetect's) is returned
    with ``chosen_on_validation`` false.
    """
    from sklearn.metrics import precision_recall_curve

    if len(set(np.asarray(y).tolist())) < 2:
        log.warning("the validation split holds one class: example threshold 0.5, not chosen")
        return {"threshold": 0.5, "f1": float("nan"), "precision": float("nan"),
                "recall": float("nan"), "chosen_on_validation": False}  # fmt: skip
    precision, recall, thresholds = precision_recall_curve(y, risk)
    f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall + 1e-300), 0)
    f1 = f1[:-1]
    best = int(np.flatnonzero(f1 == f1.max())[-1])
    return {
        "threshold": float(thresholds[best]),
        "f1": float(f1[best]),
        "precision": float(precision[best]),
        "recall": float(recall[best]),
        "chosen_on_validation": True,
    }
