"""Compose a configuration outside a run: a verifier for a benchmark, an experiment's defaults.

Why: ``scripts/bench_verifiers.py`` must time exactly the verifier a study would use, so it
composes ``conf/verifier/<name>.yaml`` with Hydra (schema checks and the architecture
defaults included) and instantiates it the way the runner does, instead of re-declaring
settings; ``make tables`` counts a logged run as the reproduction when its settings equal
its experiment's config composed afresh (`experiment_config`). Composition belongs at the
edge with the entry point, so it lives here and not in the packages that use the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from runner.config import recorded, register_configs
from runner.paths import PROJECT_ROOT
from runner.schema_checks import with_schemas
from runner.settings import SEED

CONF_DIR = PROJECT_ROOT / "conf"


def master_seed(conf_dir: Path = CONF_DIR) -> int:
    """The master ``seed`` of the root config (``conf/config.yaml``)."""
    return int(OmegaConf.load(conf_dir / "config.yaml").get("seed", SEED))


def compose_verifier(
    name: str, overrides: Sequence[str] = (), conf_dir: Path = CONF_DIR, seed: int | None = None
) -> DictConfig:
    """Compose ``conf/verifier/<name>.yaml`` (with its defaults) into one config node.

    Parameters
    ----------
    name : str
        File stem in ``conf/verifier/``.
    overrides : sequence of str
        Hydra overrides relative to the verifier node, e.g. ``["weights=random"]``.
    conf_dir : Path
        Config root.
    seed : int or None
        The master seed the verifier's ``seed: ${seed}`` follows (None: the root config's,
        `master_seed`), as in a run.

    Returns
    -------
    DictConfig
        The verifier node (``_target_`` and its parameters), interpolations resolved.

    Raises
    ------
    ConfigError
        A value of the wrong type for the verifier's class (`with_schemas`).
    """
    register_configs()
    seed = master_seed(conf_dir) if seed is None else seed
    was_initialized = GlobalHydra.instance().is_initialized()
    if was_initialized:
        GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
        cfg = compose(
            config_name=None,
            overrides=[
                f"+seed={seed}",
                f"+verifier@verifier={name}",
                *[f"verifier.{o}" for o in overrides],
            ],
        )
    OmegaConf.resolve(cfg)
    return with_schemas(cfg).verifier  # typed by its class, as a run's pre-flight types it


def build_verifier(
    name: str, overrides: Sequence[str] = (), conf_dir: Path = CONF_DIR, seed: int | None = None
) -> Any:
    """Instantiate the verifier of ``conf/verifier/<name>.yaml`` (see `compose_verifier`)."""
    return instantiate(compose_verifier(name, overrides, conf_dir, seed), _convert_="all")


def experiment_config(experiment: str, conf_dir: Path = CONF_DIR) -> dict[str, Any] | None:
    """``conf/experiment/<experiment>.yaml`` composed afresh with no overrides, as a run
    records its config (`runner.config.recorded`); None when the experiment has no file."""
    if not (conf_dir / "experiment" / f"{experiment}.yaml").exists():
        return None
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
        cfg = compose("config", overrides=[f"experiment={experiment}"])
    return recorded(cfg)
