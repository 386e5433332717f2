"""Where a verifier's model comes from, and how it is prepared for fast inference.

Why one module: every verifier resolves its model the same way (a local directory, a Hub id
from the local cache, or the exact architecture with seeded random weights), fails the same
way when the model is missing (at once, with how to provide it, instead of ~20 s of Hub
retries), never runs remote code (``trust_remote_code=False``), and gets the same reduced
precision options (bf16 autocast, int8 dynamic quantisation: `runner.verifiers.quantization`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.env import hub_offline
from runner.errors import ConfigError, RunnerError
from runner.verifiers.architecture import build_config, build_random_model, load_architecture
from runner.verifiers.checkpoint_check import refuse_headless
from runner.verifiers.int8_setting import int8_range_setting
from runner.verifiers.tokenizer_training import cached_tokenizer

WEIGHTS = ("pretrained", "random")
DEVICES = ("cpu", "cuda")
DTYPES = ("float32", "bfloat16", "float16")
QUANTIZE = (None, "int8_dynamic", "int8_mixed")

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


class ModelNotAvailableError(RunnerError, FileNotFoundError):
    """A verifier's model is neither on disk nor in the local Hub cache (or the Hub is off)."""


@dataclass
class LoadedModel:
    """A model ready to score, with what identifies it in a runtime record.

    Attributes
    ----------
    model : torch.nn.Module
        In eval mode, on its device, quantised if asked.
    tokenizer : transformers fast tokenizer
    name : str
        Model path or Hub id; ``"random:<architecture>"`` for random weights.
    revision : str or None
        Hub revision, or the commit hash recorded by transformers when known.
    n_parameters : int
        Parameters of the unquantised model.
    tokenizer_info : dict
        Where the tokenizer came from (for stand-in tokenizers: the training record).
    """

    model: Any
    tokenizer: Any
    name: str
    revision: str | None
    n_parameters: int
    tokenizer_info: dict = field(default_factory=dict)


def how_to_provide(model: str) -> str:
    """The fix a user needs when a model cannot be found."""
    return (
        f"Provide the model as a local directory: on a machine with internet run "
        f"`huggingface-cli download {model} --local-dir DIR`, copy DIR here and set the "
        f"verifier's model=DIR (e.g. `verifiers.<name>.model=DIR`); or allow the Hub with "
        f"RUNNER_ALLOW_HUB=1 and HF_HUB_OFFLINE=0; or measure cost only with weights=random."
    )


def resolve_source(model: str, revision: str | None = None) -> str:
    """A local model directory, or a Hub id that can be loaded now.

    Parameters
    ----------
    model : str
        Local directory (must hold ``config.json``) or Hub id ``owner/name``.
    revision : str or None
        Hub revision (branch, tag or commit).

    Returns
    -------
    str
        The directory path, or the Hub id when it is in the local cache (or the Hub is
        allowed).

    Raises
    ------
    ModelNotAvailableError
        At once, saying how to provide the model.
    """
    if model.startswith("models:/"):
        return registered_folder(model)
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelNotAvailableError(
                f"model directory {path} has no config.json: not a saved transformers model. "
                + how_to_provide(model)
            )
        return str(path.resolve())
    if not _HUB_ID.match(model):
        raise ModelNotAvailableError(
            f"model path {model!r} does not exist. " + how_to_provide(model)
        )
    if not hub_offline():
        return model
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(model, "config.json", revision=revision)
    if isinstance(cached, str):
        return model
    raise ModelNotAvailableError(
        f"model {model!r} is not a local directory and, as a Hub id, is not in the local "
        f"Hub cache, while the Hub is offline (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE set). "
        + how_to_provide(model)
    )


REGISTRY_ARTIFACT = "detector"
"""The artifact of a registered detector that holds its weights folder
(`runner.verifiers.detector_model`)."""


TRAINED_BY = {"wice_claim_verifier": "train_claim_verifier"}
"""Registered name -> the experiment that trains it (others: ``train_detector``), named
when a ``models:/`` URI is not in the registry."""

_REGISTRY: dict[str, str | None] = {"uri": None}


def use_registry(uri: str | None) -> None:
    """Look ``models:/`` URIs up in the store at `uri` (the pipeline sets the run's store)."""
    _REGISTRY["uri"] = uri


def registry_tracking_uri() -> str:
    """Where ``models:/`` URIs are looked up: the run's tracking store (`use_registry`),
    else ``MLFLOW_TRACKING_URI``, else the runner's default store (SQLite under the
    artifacts folder, as ``tracking=sqlite`` uses)."""
    from runner.paths import artifacts_dir

    return (
        _REGISTRY["uri"]
        or os.environ.get("MLFLOW_TRACKING_URI")
        or f"sqlite:///{artifacts_dir() / 'mlflow.db'}"
    )


def registered_folder(uri: str) -> str:
    """The weights folder of a registered detector, ``models:/<name>@<alias>`` or
    ``models:/<name>/<version>``, copied once per version under the artifacts cache.

    Raises
    ------
    ModelNotAvailableError
        The URI is malformed, not in the registry, or its model ships no weights folder.
    """
    import mlflow
    from mlflow.exceptions import MlflowException

    match = re.match(r"^models:/(?P<name>[^/@]+)(?:@(?P<alias>[^/]+)|/(?P<version>\d+))$", uri)
    tracking = registry_tracking_uri()
    if not match:
        raise ModelNotAvailableError(
            f"model {uri!r}: expected models:/<name>@<alias> or models:/<name>/<version>"
        )
    client = mlflow.MlflowClient(tracking_uri=tracking, registry_uri=tracking)
    try:
        if match["alias"]:
            version = client.get_model_version_by_alias(match["name"], match["alias"])
        else:
            version = client.get_model_version(match["name"], match["version"])
    except MlflowException as exc:
        raise ModelNotAvailableError(
            f"model {uri!r} is not in the registry at {tracking} (set MLFLOW_TRACKING_URI to "
            f"another store, or train one: python -m runner "
            f"experiment={TRAINED_BY.get(match['name'], 'train_detector')}): "
            f"{str(exc).splitlines()[0]}"
        ) from None
    cache = _registry_cache(tracking, version)
    if not cache.is_dir():
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(f"{cache}.tmp{os.getpid()}")
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(tmp)
        # From where the version's files are stored: a ``models:/`` URI would be resolved by
        # a client of MLflow's default tracking store, creating ./mlflow.db in the folder
        # the command runs from.
        local = mlflow.artifacts.download_artifacts(
            artifact_uri=client.get_model_version_download_uri(match["name"], version.version),
            dst_path=str(tmp),
            tracking_uri=tracking,
        )
        if not cache.exists():  # else another process copied it meanwhile
            os.replace(local, cache)
        shutil.rmtree(tmp, ignore_errors=True)
    folder = _artifact_folder(cache)
    if folder is None or not (folder / "config.json").is_file():
        raise ModelNotAvailableError(
            f"model {uri!r} (version {version.version}) ships no '{REGISTRY_ARTIFACT}' "
            f"weights folder: it is not a detector registered by train_detector"
        )
    return str(folder.resolve())


def _registry_cache(tracking: str, version: Any) -> Path:
    """Where one registered version's files are copied: beside a SQLite store (so two
    stores never share copies), else under the artifacts folder; the folder name holds a
    hash of the store, the version's run and its source, never the version number alone."""
    import hashlib

    from runner.paths import artifacts_dir

    key = hashlib.sha1(f"{tracking}|{version.run_id}|{version.source}".encode()).hexdigest()
    if tracking.startswith("sqlite:///"):
        root = Path(tracking.removeprefix("sqlite:///")).parent / "cache" / "registry"
    else:
        root = artifacts_dir() / "cache" / "registry"
    return root / version.name / f"{version.version}-{key[:12]}"


def _artifact_folder(model_dir: Path) -> Path | None:
    """The folder of the pyfunc artifact `REGISTRY_ARTIFACT` in a downloaded model."""
    import yaml

    mlmodel = model_dir / "MLmodel"
    if not mlmodel.is_file():
        return None
    flavors = (yaml.safe_load(mlmodel.read_text()) or {}).get("flavors", {})
    artifacts = (flavors.get("python_function") or {}).get("artifacts") or {}
    entry = artifacts.get(REGISTRY_ARTIFACT)
    return model_dir / entry["path"] if entry and entry.get("path") else None


def read_config_json(source: str, revision: str | None = None) -> dict[str, Any]:
    """The raw ``config.json`` of a local directory or cached Hub model."""
    path = Path(source) / "config.json"
    if not path.is_file():
        from huggingface_hub import hf_hub_download

        path = Path(
            hf_hub_download(
                source, "config.json", revision=revision, local_files_only=hub_offline()
            )
        )
    return json.loads(path.read_text())


def load_tokenizer(source: str, revision: str | None = None) -> Any:
    """A fast tokenizer (offsets are needed) from a directory or cached Hub id."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(
        source, revision=revision, trust_remote_code=False, local_files_only=hub_offline()
    )
    if not getattr(tokenizer, "is_fast", False):
        raise ConfigError(f"tokenizer of {source}: a fast (tokenizers) tokenizer is required")
    return tokenizer


def count_parameters(model: Any) -> int:
    """Number of parameters (shared tensors counted once)."""
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return int(total)


def load_pretrained(
    model_class: type, model: str, revision: str | None, tokenizer: str | None = None, **kwargs: Any
) -> LoadedModel:
    """Load weights and tokenizer from a local directory or the local Hub cache.

    Parameters
    ----------
    model_class : type
        A transformers auto class or model class with ``from_pretrained``.
    model : str
        Directory or Hub id.
    revision : str or None
    tokenizer : str or None
        Separate tokenizer directory or id; default: the model's own.
    **kwargs
        Passed to ``from_pretrained`` (e.g. ``num_labels``).

    Returns
    -------
    LoadedModel

    Raises
    ------
    ConfigError
        The checkpoint lacks the head of `model_class` (transformers would initialise it
        at random and only warn): `runner.verifiers.checkpoint_check`.
    """
    source = resolve_source(model, revision)
    tok_source = resolve_source(tokenizer, revision) if tokenizer else source
    loaded, info = model_class.from_pretrained(
        source,
        revision=revision,
        trust_remote_code=False,
        local_files_only=hub_offline(),
        output_loading_info=True,
        **kwargs,
    )
    prefix = f"{loaded.base_model_prefix}."
    refuse_headless(
        source, sorted(k for k in info["missing_keys"] if not k.startswith(prefix)), "model"
    )
    tok = load_tokenizer(tok_source, revision if tok_source == source else None)
    commit = getattr(loaded.config, "_commit_hash", None)
    return LoadedModel(
        loaded.eval(),
        tok,
        model,
        revision or commit,
        count_parameters(loaded),
        {"source": tok_source},
    )


def load_random(
    model_class: type,
    architecture: Any,
    seed: int,
    tokenizer: str | None = None,
    corpus: str | None = None,
) -> LoadedModel:
    """The exact architecture with seeded random weights and a realistic tokenizer.

    Parameters
    ----------
    model_class : type
        Concrete transformers class (e.g. ``DebertaV2ForSequenceClassification``).
    architecture : mapping or str
        Architecture spec or name (`load_architecture`).
    seed : int
        Seed of the weights.
    tokenizer : str or None
        A real tokenizer to use instead of the trained stand-in.
    corpus : str or None
        Corpus for training the stand-in tokenizer (default RAGTruth train).

    Returns
    -------
    LoadedModel
        ``name`` is ``"random:<architecture name>"``.
    """
    if architecture is None:
        raise ConfigError("weights=random needs an architecture (conf/architecture/*.yaml)")
    arch = load_architecture(architecture)
    if tokenizer:
        tok = load_tokenizer(resolve_source(tokenizer))
        info: dict[str, Any] = {"source": tokenizer}
        config = build_config(arch)
    else:
        tok, info = cached_tokenizer(arch["name"], arch["tokenizer"], corpus)
        info = {"source": "trained", **info}
        config = build_config(arch, tok)
    if len(tok) > config.vocab_size:
        raise ConfigError(
            f"architecture {arch['name']}: tokenizer has {len(tok)} tokens, "
            f"more than the model's vocab_size={config.vocab_size}"
        )
    model = build_random_model(model_class, config, seed)
    return LoadedModel(
        model, tok, f"random:{arch['name']}", None, count_parameters(model), {**info, "seed": seed}
    )


def check_precision(device: str, dtype: str, quantize: str | None) -> None:
    """Raise `ConfigError` for a device / dtype / quantisation that cannot work."""
    if device not in DEVICES:
        raise ConfigError(f"device {device!r} not in {DEVICES}")
    if dtype not in DTYPES:
        raise ConfigError(f"dtype {dtype!r} not in {DTYPES}")
    if quantize not in QUANTIZE:
        raise ConfigError(f"quantize {quantize!r} not in {QUANTIZE}")
    if dtype == "float16" and device != "cuda":
        raise ConfigError("dtype float16 needs device cuda (on CPU use bfloat16)")
    if quantize is not None and device != "cpu":
        raise ConfigError(f"quantize {quantize} runs on device cpu only")
    if quantize is not None and dtype != "float32":
        raise ConfigError(f"quantize {quantize} combines with dtype float32 only")
    if quantize is not None:
        int8_range_setting()


def prepare(
    model: Any,
    device: str,
    quantize: str | None,
    fused_attention: bool = False,
    full_range: bool | None = None,
) -> Any:
    """The model as it will score: on `device`, in eval mode, with the configured speed-ups.

    Parameters
    ----------
    model : PreTrainedModel
        The loaded float32 model; it is never modified (shared by `Verifier.with_settings`).
    device : {"cpu", "cuda"}
    quantize : {None, "int8_dynamic", "int8_mixed"}
        `runner.verifiers.quantization.quantize_int8`, on a copy.
    fused_attention : bool
        DeBERTa only: `runner.verifiers.deberta_attention.fused_copy` (same numbers, faster).
    full_range : bool or None
        int8 activation range (None: `runner.verifiers.quantization.int8_range`).

    Returns
    -------
    PreTrainedModel
        `model` itself when nothing applies, else a copy.
    """
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device cuda requested but torch sees no CUDA device")
    model = model.to(device).eval()
    if fused_attention:
        from runner.verifiers.deberta_attention import fused_copy

        try:
            model = fused_copy(model)
        except ValueError as err:
            raise ConfigError(
                f"attention fused applies to DeBERTa-v2/v3 models only ({err}); "
                f"set the verifier's attention to stock"
            ) from err
    if quantize is not None:
        from runner.verifiers.quantization import quantize_int8

        model = quantize_int8(model, mixed=quantize == "int8_mixed", full_range=full_range)
    return model


@contextlib.contextmanager
def precision(device: str, dtype: str) -> Iterator[None]:
    """Inference mode, with autocast for bfloat16 / float16."""
    import torch

    with torch.inference_mode():
        if dtype == "float32":
            yield
        else:
            with torch.autocast(device_type=device, dtype=getattr(torch, dtype)):
                yield


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Use `threads` intra-op threads inside the block (None: leave torch's setting)."""
    import torch

    if threads is None:
        yield
        return
    if threads < 1:
        raise ConfigError(f"threads must be >= 1, got {threads}")
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)
