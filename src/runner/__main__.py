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

from runner.cli_errors import run_reporting_config_errors  # noqa: E402
from runner.config import register_configs, searchpath_dirs  # noqa: E402
from runner.errors import RunnerError  # noqa: E402
from runner.interrupts import Terminated  # noqa: E402

register_configs(conf_dirs=searchpath_dirs(sys.argv[1:]))


@hydra.main(version_base="1.3", config_path="../../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    """Hydra entry point; one call per (multi)run job."""
    from runner.pipeline import run
    from runner.reporting import print_summary

    _separate_multirun_outputs(cfg)
    try:
        outcome = run(cfg)  # the job's overrides come from HydraConfig (run names, manifest)
    except RunnerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except Terminated as exc:  # the run is cleaned up already (`runner.pipeline.run`)
        print(
            f"error: run {exc}: its unfinished folder was removed and its MLflow run, if "
            "any, marked KILLED",
            file=sys.stderr,
        )
        sys.exit(exc.exit_code)
    print_summary(outcome)


def _separate_multirun_outputs(cfg: DictConfig) -> None:
    """Give each sweep job its own folder, `multirun/<sweep>/<job overrides>/`.

    The sweep is named like Hydra's sweep folder (its start time), so a later sweep or a
    plain run never writes over an earlier sweep's jobs; inside, each job keeps the same
    `runs/<id>/` + `latest` layout as a plain run.
    """
    from pathlib import Path

    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    if hc.mode == RunMode.MULTIRUN:
        sweep = Path(hc.sweep.dir).name
        job = _folder_name(hc.job.override_dirname) or f"job{hc.job.num}"
        cfg.paths.output_dir = f"{cfg.paths.output_dir}/multirun/{sweep}/{job}"


def _folder_name(text: str, limit: int = 120) -> str:
    """A single path component from a job's overrides (no `/`; long ones shortened + hashed)."""
    import hashlib

    name = text.replace("/", "_").replace("\0", "")
    if len(name) > limit:
        name = f"{name[:limit]}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"
    return name


if __name__ == "__main__":
    run_reporting_config_errors(main)
