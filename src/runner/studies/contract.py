"""The study contract: a study is the object an experiment configures.

Why: an experiment names its study class in its defaults list (``- /study@study:
runner.studies.rq1_cheap_signals.CheapSignals``) and hands it the parts it takes by
interpolation (``gates: ${gates}``, ``split: ${split}``); Hydra's `instantiate` builds the
study with every part inside it, and the study's constructor declares, with types, exactly
what it takes. A study is a dataclass:

    @dataclass
    class CheapSignals(
        Study,
        name="rq1_cheap_signals",   # what the manifest records; `make tables` finds it by it
        paper="ragscope",           # experiments/<paper>/ holds the published values
        titles=TITLES,              # table id -> title
    ):
        gates: dict[str, Any]       # conf/experiment/rq1_cheap_signals.yaml: ${gates}
        split: Any
        bootstrap: BootstrapConf
        params: Params = field(default_factory=Params)   # `study.params.<key>`

        def __post_init__(self): ...          # checks that need no data (optional)
        def run(self, data, run): ...         # -> StudyResult

Building the study is the pre-flight check: its ``__post_init__`` refuses settings that
cannot work before any data is read (`runner.pipeline.check_config`). `run` gets the loaded
data set and the `RunContext` (seed, caches, the run's tracking store); it never reads a
config, opens a file of its own or sees Hydra. Optional: `figures` (drawn from long-format
cells alone, so `make tables` can redraw them) and `documents` (files drawn after the
figures exist, e.g. ``report.md``). Defining the class registers it under `name`.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from runner.errors import ConfigError
from runner.results import StudyResult
from runner.settings import PART


@dataclass(frozen=True)
class RunContext:
    """What a run knows beyond its configured parts, handed to `Study.run`.

    Attributes
    ----------
    experiment : str
        The experiment's name (``conf/experiment/<name>.yaml``).
    seed : int
        The master seed; every other seed in the config follows it unless overridden.
    progress : bool
        Whether long loops show progress bars.
    cache_dir : str or None
        Root of the on-disk caches (features, judge answers).
    commit : str or None
        The git commit of the code that runs (the manifest records the same).
    tracking : TrackingConf or None
        The run's store (``uri`` resolved): where registered models are read and written.
    overrides : tuple of str
        The command-line overrides of the run (as the manifest records them), so a study
        can print the command of a next step with the same settings (`operating_report`).
    """

    experiment: str
    seed: int
    progress: bool = False
    cache_dir: str | None = None
    commit: str | None = None
    tracking: Any = None
    overrides: tuple[str, ...] = ()

    @property
    def tracking_uri(self) -> str:
        """The run's tracking store, or a `ConfigError` when the run has none."""
        if self.tracking is None or not self.tracking.uri:
            raise ConfigError(
                f"experiment {self.experiment!r} needs a tracking store (tracking=sqlite)"
            )
        return self.tracking.uri


class Study(ABC):
    """Base class of every study; defining a subclass registers it under its `name`.

    A part, not a record: its config schema (derived from its fields, `runner.settings.
    derive`) carries ``_target_``, so `instantiate` builds it.
    """

    name: ClassVar[str]
    paper: ClassVar[str | None] = None
    paper_datasets: ClassVar[tuple[str, ...] | None] = None  # None: every dataset compares
    titles: ClassVar[dict[str, str]] = {}

    registry: ClassVar[dict[str, type[Study]]] = {}

    def __init_subclass__(
        cls,
        *,
        name: str,
        titles: dict[str, str],
        paper: str | None = None,
        paper_datasets: tuple[str, ...] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls.name, cls.titles = name, titles
        cls.paper, cls.paper_datasets = paper, paper_datasets
        known = Study.registry.get(name)
        if known is not None and _path(known) != _path(cls):  # a reloaded module is no clash
            raise TypeError(f"two studies named {name!r}: {_path(known)} and {_path(cls)}")
        Study.registry[name] = cls

    @abstractmethod
    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Compute the study's cells, scores and runtime from the loaded data."""

    @classmethod
    def figures(cls, cells: Any) -> dict[str, Any]:
        """Figures drawn from the long-format cells alone (name -> matplotlib figure): a
        class method, so `make tables` redraws them without building the study."""
        return {}

    def documents(self, result: StudyResult, out_dir: Path) -> dict[str, str]:
        """Documents written after the figures exist (file name -> text)."""
        return {}

    def parts(self) -> Iterator[tuple[str, Any]]:
        """Every part this study was built with, by its config key (``verifiers.nli``).

        The pipeline asks them for their model files before any work (``check_sources``)
        and the manifest records what they loaded.
        """
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, Mapping):
                yield from ((f"{f.name}.{k}", v) for k, v in value.items())
            elif value is not None:
                yield f.name, value


setattr(Study, PART, True)


def configured(parts: Mapping[str, Any], group: str) -> Mapping[str, Any]:
    """`parts` when at least one is configured, else a `ConfigError` saying how to add one."""
    if not parts:
        kind = group.removesuffix("s")
        raise ConfigError(
            f"this study needs {group}, and the experiment configures none: add one with "
            f"+{kind}@{group}.<name>=<config> or `- /{kind}@{group}.<name>: <config>` in its YAML"
        )
    return parts


def check_named(parts: Mapping[str, Any], names: Iterable[str], key: str, group: str) -> None:
    """Every name in `names` is a part configured under `group`, else a `ConfigError`.

    `group` is ``gates``, ``verifiers``, ``judges`` or ``splits``; `key` is the setting
    that names the parts (``study.params.gates``, ``routing.verifier``). The error names
    the missing parts, the configured ones and how to add one.
    """
    missing = sorted(set(names) - set(parts))
    if not missing:
        return
    kind = group.removesuffix("s")
    if len(missing) == 1:
        what = f"{key}={missing[0]!r} is not a configured {kind}"
    else:
        what = f"{key}: {missing} are not configured {group}"
    raise ConfigError(
        f"{what} (configured: {sorted(parts)}); add one with +{kind}@{group}.{missing[0]}="
        f"<config> or `- /{kind}@{group}.{missing[0]}: <config>` in the experiment's YAML"
    )


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def load_study(name: str) -> type[Study]:
    """The study class registered as `name` (importing `runner.studies.<name>`)."""
    if name not in Study.registry:
        try:
            importlib.import_module(f"runner.studies.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"runner.studies.{name}":
                raise
            raise ConfigError(
                f"no study {name!r}: no module runner.studies.{name} "
                f"(available: {', '.join(available_studies())})"
            ) from exc
    cls = Study.registry.get(name)
    if cls is None:
        raise ConfigError(
            f"runner.studies.{name} defines no Study subclass named {name!r}: not a study module"
        )
    return cls


def available_studies() -> list[str]:
    """Names of the study modules shipped with the runner (this module's siblings)."""
    return sorted(
        m.name
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if not m.name.startswith("_") and m.name != "contract"
    )
