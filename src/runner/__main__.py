"""`python -m runner experiment=<name> [overrides]`: compose, run, log, render.

Hydra composes `conf/config.yaml` with the overrides; `runner.pipeline.run` does the
work. Offline flags are set before any Hub-aware library is imported.
"""

from __future__ import annotations

from runner.env import apply_offline_defaults

apply_offline_defaults()

import sys  # noqa: E402

import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from runner.cli_errors import install as one_line_config_errors  # noqa: E402
from runner.config import register_configs  # noqa: E402
from runner.errors import RunnerError  # noqa: E402

register_configs()
one_line_config_errors()


@hydra.main(version_base="1.3", config_path="../../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    """Hydra entry point; one call per (multi)run job."""
    from runner.pipeline import run
    from runner.reporting.console import print_summary

    _separate_multirun_outputs(cfg)
    try:
        outcome = run(cfg)
    except RunnerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    print_summary(cfg, outcome)


def _separate_multirun_outputs(cfg: DictConfig) -> None:
    """Give each sweep job its own output folder, named by its overrides."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    if hc.mode == RunMode.MULTIRUN:
        job = hc.job.override_dirname or str(hc.job.num)
        cfg.paths.output_dir = f"{cfg.paths.output_dir}/multirun/{job}"


if __name__ == "__main__":
    main()
