"""The study contract: what a study receives, what it must provide, and the registry.

Why a declared contract: the pipeline builds everything a study works with from the config
(data, gates, verifiers, judges, splitters, bootstrap settings, the HRI configuration) and
hands it over as one typed `Inputs`; the study reads as the paper's recipe and never sees
Hydra, OmegaConf or a file path it must open itself. A study is one class, declared with
what the registry needs to know about it:

    class CheapSignals(
        Study,
        name="rq1_cheap_signals",   # `study.name` in conf/experiment/<name>.yaml
        params=Params,              # dataclass: typed `study.params`
        paper="ragscope",           # experiments/<paper>/ holds the published values
        titles=TITLES,              # table id -> title
    ):
        def run(self, inputs, params): ...      # -> StudyResult

A study that reads its rows in batches (``streams=True``, `runner.studies.route`) gets a
stream (`runner.data.rag_stream`) for a data set that can stream, else the loaded frame,
and optionally `check` (settings that can fail before any data is read),
`registered_model` (the ``models:/`` URI of a registered model the pipeline loads for it,
``Inputs.model``), `figures` (drawn from long-format cells alone, so `make tables` can
redraw them) and `documents` (files drawn after the figures exist, e.g. ``report.md``).
Defining the class registers it. `Inputs.require_parts` is the one check that the parts a
setting names are configured.
"""

from __future__ import annotations

import importlib
import pkgutil
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from runner.errors import ConfigError
from runner.results import StudyResult


@dataclass(frozen=True)
class Inputs:
    """Everything a study works with, built by `runner.pipeline` from the composed config.

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
    data : LoadedData or None
        The loaded dataset; None while `Study.check` runs (no data is read before it) and
        for studies that need none.
    bootstrap : BootstrapConf or None
        Group-bootstrap settings (``n_resamples``, ``level``, ``seed``).
    split : splitter or None
        The cross-validation splitter of ``split``.
    splits : dict of str -> splitter
        Further named splitters (``splits.<name>``), e.g. RQ5's leave-source-out and
        target-adaptation designs.
    gates, verifiers, judges : dict of str -> part
        Built parts, in config order.
    span_detector : SpanDetector or None
    hri : HRIConfig or None
        The validated HRI configuration (``hri`` group).
    routing : RoutingConf
        The routing contract (``routing`` group), typed; its defaults when the experiment
        sets none (built by the pipeline, so a study reads ``inputs.routing`` as it is).
    tracking : TrackingConf or None
        Where runs and registered models live (routing studies load models from there).
    detector, train : DetectorConf, TrainConf or None
        What `train_detector` trains and how (``detector`` and ``train`` groups), typed.
    commit : str or None
        The git commit of the code that runs (read once by the pipeline; the manifest
        records the same), None outside a git checkout.
    model : RoutedModel or None
        The registered model the study routes with, loaded by the pipeline from the URI
        `Study.registered_model` names (`runner.routing.registry`); None for other studies.
    """

    experiment: str
    seed: int
    progress: bool = False
    cache_dir: str | None = None
    data: Any = None
    bootstrap: Any = None
    split: Any = None
    splits: dict[str, Any] = field(default_factory=dict)
    gates: dict[str, Any] = field(default_factory=dict)
    verifiers: dict[str, Any] = field(default_factory=dict)
    judges: dict[str, Any] = field(default_factory=dict)
    span_detector: Any = None
    hri: Any = None
    routing: Any = None
    tracking: Any = None
    detector: Any = None
    train: Any = None
    commit: str | None = None
    model: Any = None

    def with_data(self, data: Any) -> Inputs:
        """The same inputs with the loaded dataset."""
        return replace(self, data=data)

    def require(self, what: str) -> Any:
        """A configured input, or a `ConfigError` naming the missing config group."""
        value = getattr(self, what)
        if value is None or value == {}:
            raise ConfigError(
                f"experiment {self.experiment!r} configures no {what}: this study needs it "
                f"(add a `{what}` entry to conf/experiment/{self.experiment}.yaml)"
            )
        return value

    def require_parts(self, group: str, names: Iterable[str], key: str) -> None:
        """Every name in `names` is a part configured under `group`, else a `ConfigError`.

        `group` is ``gates``, ``verifiers``, ``judges`` or ``splits``; `key` is the setting
        that names the parts (``study.params.gates``, ``routing.verifier``). The error names
        the missing parts, the configured ones and how to add one.
        """
        configured = getattr(self, group)
        missing = sorted(set(names) - set(configured))
        if not missing:
            return
        kind = PART_KINDS.get(group, group)
        if len(missing) == 1:
            name = missing[0]
            what = f"{key}={name!r} is not a configured {kind}"
        else:
            what = f"{key}: {missing} are not configured {group}"
        raise ConfigError(
            f"{what} (configured: {sorted(configured)}); add one with "
            f"+{kind}@{group}.{missing[0]}=<config> or `- /{kind}@{group}.{missing[0]}: "
            f"<config>` in conf/experiment/{self.experiment}.yaml"
        )


PART_KINDS = {"gates": "gate", "verifiers": "verifier", "judges": "judge", "splits": "split"}
"""Config group of named parts -> the group its configs come from (``conf/<kind>/``)."""


class Study(ABC):
    """Base class of every study; defining a subclass registers it under its `name`."""

    name: ClassVar[str]
    Params: ClassVar[type]
    paper: ClassVar[str | None] = None
    paper_datasets: ClassVar[tuple[str, ...] | None] = None  # None: every dataset compares
    titles: ClassVar[dict[str, str]] = {}
    streams: ClassVar[bool] = False  # True: `inputs.data` may be a stream read in batches

    registry: ClassVar[dict[str, type[Study]]] = {}

    def __init_subclass__(
        cls,
        *,
        name: str,
        params: type,
        titles: dict[str, str],
        paper: str | None = None,
        paper_datasets: tuple[str, ...] | None = None,
        streams: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls.name, cls.Params, cls.titles = name, params, titles
        cls.streams = streams
        cls.paper, cls.paper_datasets = paper, paper_datasets
        known = Study.registry.get(name)
        if known is not None and _path(known) != _path(cls):  # a reloaded module is no clash
            raise TypeError(f"two studies named {name!r}: {_path(known)} and {_path(cls)}")
        Study.registry[name] = cls

    def check(self, inputs: Inputs, params: Any) -> None:  # noqa: B027 (optional hook)
        """Settings that can fail before any data is read (`inputs.data` is None here)."""

    @abstractmethod
    def run(self, inputs: Inputs, params: Any) -> StudyResult:
        """Compute the study's cells, scores and runtime from built inputs."""

    def registered_model(self, inputs: Inputs, params: Any) -> str | None:
        """The ``models:/`` URI of the registered model this study routes with (None: none).

        Called once the data is loaded; the pipeline loads that model from the run's
        tracking store and hands it over as `Inputs.model`, so a study never talks to
        MLflow itself.
        """
        return None

    def figures(self, cells: Any) -> dict[str, Any]:
        """Figures drawn from the long-format cells alone (name -> matplotlib figure)."""
        return {}

    def documents(self, result: StudyResult, out_dir: Path) -> dict[str, str]:
        """Documents written after the figures exist (file name -> text)."""
        return {}


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def load_study(name: str) -> Study:
    """The study registered as `name` (importing `runner.studies.<name>`)."""
    if name not in Study.registry:
        try:
            importlib.import_module(f"runner.studies.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"runner.studies.{name}":
                raise
            raise ConfigError(
                f"study.name={name!r}: no module runner.studies.{name} "
                f"(available: {', '.join(available_studies())})"
            ) from exc
    cls = Study.registry.get(name)
    if cls is None:
        raise ConfigError(
            f"runner.studies.{name} defines no Study subclass named {name!r}: not a study module"
        )
    return cls()


def available_studies() -> list[str]:
    """Names of the study modules shipped with the runner (this module's siblings)."""
    return sorted(
        m.name
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if not m.name.startswith("_") and m.name != "contract"
    )
