"""The Hallucination Risk Index constants (`conf/hri/*.yaml`): one record that checks itself.

Why: the seed (001) stresses that every HRI number — label contributions, the label to
dimension mapping, dimension weights, safety floors, risk bands and the feedback decay λ —
is a provisional design parameter to be calibrated per domain. So none of them lives in
code: they are read from the `hri` config group into `HRIConfig` (``conf/hri/default.yaml``
names it; its few defaults are noted there), whose ``__post_init__`` checks them for
meaning and raises a `ConfigError` naming the key at fault (weights that do not sum to 1, a
floor on an unknown label, bands out of order, ...). The run's pre-flight builds it before
any data is read, so a bad constant is an ``error:`` line, not a failed study.

When ``weights_source`` is ``"ahp"``, the weights are the AHP principal-eigenvector
weights of ``ahp.comparisons`` (see `runner.hri.ahp`). `load_hri_config` builds the same
record from a plain mapping (a YAML file read by hand, a notebook); no ``hri`` group at
all is a `ConfigError` that says how to add it.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from runner.errors import ConfigError
from runner.hri.ahp import CR_LIMIT, ahp_weights
from runner.settings import unknown_key


@dataclass(kw_only=True)
class LabelConf:
    """One claim label of the rubric (seed Table III)."""

    contribution: float
    dimensions: list[str] = field(default_factory=list)
    allowed_dimensions: list[str] = field(default_factory=list)
    description: str = ""


@dataclass(kw_only=True)
class FloorConf:
    """One safety-floor rule φ (seed Table IV).

    A rule matches a claim that carries `label` when its criticality lies in
    [`min_criticality`, `max_criticality`] (a None bound is open) and, if any feedback
    condition is set, at least one holds: the claim has `min_feedback_events` or more
    validated feedback events ("repeated"), or (`unresolved_feedback`) one of its events
    is unresolved.
    """

    name: str
    label: str
    floor: float
    min_criticality: int | None = None
    max_criticality: int | None = None
    min_feedback_events: int | None = None
    unresolved_feedback: bool = False
    description: str = ""


@dataclass(kw_only=True)
class BandConf:
    """One risk band on the 0–`scale` axis; `upper` is its inclusive upper bound."""

    name: str
    upper: float
    action: str
    description: str = ""


@dataclass(kw_only=True)
class FeedbackConf:
    """Validated human feedback: which label and dimension it feeds, and its decay."""

    label: str = "VALIDATED_NEGATIVE_FEEDBACK"
    dimension: str = "H"
    decay_lambda: float
    time_unit_days: float = 1.0
    default_severity: float | None = None


@dataclass(kw_only=True)
class AHPConf:
    """AHP pairwise judgments over the dimensions and the consistency-ratio limit."""

    comparisons: dict[str, dict[str, Any]] = field(default_factory=dict)
    cr_limit: float = CR_LIMIT


@dataclass(kw_only=True)
class HRIConfig:
    """The whole `hri` config group, checked for meaning when built (`conf/hri/default.yaml`
    gives every key's meaning).

    After the checks ``weights`` are the effective weights, in dimension order: the
    configured ones, or with ``weights_source: ahp`` those AHP derives (`ahp_summary` then
    holds its summary); ``labels`` have their ``allowed_dimensions`` filled in.
    """

    dimensions: list[str]
    labels: dict[str, LabelConf]
    weights: dict[str, float]
    weights_source: str = "config"
    weight_tolerance: float = 1e-9
    ahp: AHPConf | None = None
    feedback: FeedbackConf
    floors: list[FloorConf] = field(default_factory=list)
    bands: list[BandConf]
    scale: float = 100.0
    band_rounding: int = 9

    def __post_init__(self) -> None:
        """Check every constant for meaning (`ConfigError` naming the key at fault)."""
        dims = _check_dimensions(self.dimensions)
        self.dimensions = list(dims)
        self.labels = _check_labels(self.labels, dims)
        _check_feedback(self.feedback, self.labels, dims)
        _check_floors(self.floors, self.labels, self.feedback.label)
        _check_bands(self.bands, self.scale)
        if not isinstance(self.band_rounding, int) or self.band_rounding < 0:
            raise ConfigError(
                f"hri.band_rounding must be a non-negative integer, got {self.band_rounding!r}"
            )
        tol = float(self.weight_tolerance)
        if not (math.isfinite(tol) and 0 <= tol < 1e-3):
            raise ConfigError(f"hri.weight_tolerance must lie in [0, 1e-3), got {tol!r}")
        self._ahp_summary: dict[str, Any] | None = None
        if self.weights_source == "config":
            self.weights = validate_weights(self.weights, dims, tol, key="hri.weights")
        elif self.weights_source == "ahp":
            if self.ahp is None or not self.ahp.comparisons:
                raise ConfigError("hri.weights_source is 'ahp' but hri.ahp.comparisons is empty")
            result = ahp_weights(
                self.ahp.comparisons, dims, cr_limit=self.ahp.cr_limit, key="hri.ahp.comparisons"
            )
            self.weights = validate_weights(
                result.weights, dims, tol, key="hri.ahp (derived weights)"
            )
            self._ahp_summary = result.to_dict()
        else:
            raise ConfigError(
                f"hri.weights_source must be 'config' or 'ahp', got {self.weights_source!r}"
            )

    @property
    def weights_origin(self) -> str:
        """Where the effective weights come from: ``config`` or ``ahp``."""
        return self.weights_source

    @property
    def ahp_summary(self) -> dict[str, Any] | None:
        """The AHP derivation (weights, consistency ratio, ...) when AHP set the weights."""
        return self._ahp_summary

    def default_severity(self) -> float:
        """Severity q of a feedback event that gives none: the feedback label's contribution."""
        if self.feedback.default_severity is not None:
            return float(self.feedback.default_severity)
        return float(self.labels[self.feedback.label].contribution)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable copy (for run records and explanations)."""
        return {
            "dimensions": list(self.dimensions),
            "labels": {
                k: {
                    "contribution": v.contribution,
                    "dimensions": list(v.dimensions),
                    "allowed_dimensions": list(v.allowed_dimensions),
                }
                for k, v in self.labels.items()
            },
            "weights": dict(self.weights),
            "weights_origin": self.weights_origin,
            "feedback": {
                "label": self.feedback.label,
                "dimension": self.feedback.dimension,
                "decay_lambda": self.feedback.decay_lambda,
                "time_unit_days": self.feedback.time_unit_days,
                "default_severity": self.default_severity(),
            },
            "floors": [
                {
                    "name": f.name,
                    "label": f.label,
                    "floor": f.floor,
                    "min_criticality": f.min_criticality,
                    "max_criticality": f.max_criticality,
                    "min_feedback_events": f.min_feedback_events,
                    "unresolved_feedback": f.unresolved_feedback,
                }
                for f in self.floors
            ],
            "bands": [{"name": b.name, "upper": b.upper, "action": b.action} for b in self.bands],
            "scale": self.scale,
            "ahp": None if self._ahp_summary is None else dict(self._ahp_summary),
        }


MISSING_HRI = (
    "hri: no HRI constants configured; add `- /hri: default` to the experiment's "
    "defaults list (conf/hri/default.yaml)"
)


def load_hri_config(node: Mapping[str, Any] | HRIConfig | None) -> HRIConfig:
    """The `hri` constants as a checked `HRIConfig`, from the record or a plain mapping.

    Parameters
    ----------
    node : HRIConfig or mapping
        The record a run builds, or the same keys as a plain mapping (``conf/hri/*.yaml``
        without its defaults list).

    Raises
    ------
    ConfigError
        Naming the key at fault: unknown keys, a required key left out, weights that are
        negative, miss a dimension or do not sum to 1, unknown labels or dimensions, floors
        or bands that cannot work, an AHP matrix above its consistency-ratio limit.
    """
    if node is None:
        raise ConfigError(MISSING_HRI)
    if isinstance(node, HRIConfig):
        return node
    return _record(HRIConfig, node, "hri")


def _record(kind: type, node: Any, key: str) -> Any:
    """`kind` built from the mapping `node`, its nested records too; unknown or missing keys
    are a `ConfigError` naming them (what OmegaConf's schema says for a composed group)."""
    if not isinstance(node, Mapping):
        raise ConfigError(f"{key}: expected a mapping of {kind.__name__}'s keys, got {node!r}")
    fields = {f.name: f for f in dataclasses.fields(kind)}
    unknown = [k for k in node if k not in fields]
    if unknown:
        raise ConfigError(unknown_key(key, str(unknown[0]), kind))
    hints = typing.get_type_hints(kind)
    values = {name: _value(hints[name], value, f"{key}.{name}") for name, value in node.items()}
    try:
        return kind(**values)
    except TypeError as exc:  # a required key left out
        raise ConfigError(f"{key}: {exc}") from None


def _value(hint: Any, value: Any, key: str) -> Any:
    """`value` with the records `hint` names built from their mappings."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return _record(hint, value, key)
    if value is None:
        return None
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _value(args[0], value, key)
    if origin is list and args and dataclasses.is_dataclass(args[0]):
        return [_record(args[0], v, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin is dict and len(args) == 2 and dataclasses.is_dataclass(args[1]):
        return {k: _record(args[1], v, f"{key}.{k}") for k, v in value.items()}
    return value


def validate_weights(
    weights: Mapping[str, float],
    dimensions: tuple[str, ...],
    tolerance: float = 1e-9,
    key: str = "weights",
) -> dict[str, float]:
    """Check dimension weights: one per dimension, finite, non-negative, summing to 1.

    Parameters
    ----------
    weights : mapping of dimension -> weight
    dimensions : tuple of str
        The dimensions K; every one needs a weight, no other key is allowed.
    tolerance : float
        Allowed |Σw − 1|.
    key : str
        Config key named in messages.

    Returns
    -------
    dict
        The weights as floats, in dimension order.

    Raises
    ------
    ConfigError
        Naming the offending dimension or the actual sum.
    """
    unknown = [k for k in weights if k not in dimensions]
    if unknown:
        raise ConfigError(
            f"{key}: unknown dimension(s) {unknown}; dimensions are {list(dimensions)}"
        )
    missing = [k for k in dimensions if k not in weights]
    if missing:
        raise ConfigError(f"{key}: no weight for dimension(s) {missing}")
    out: dict[str, float] = {}
    for k in dimensions:
        w = weights[k]
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
            raise ConfigError(f"{key}.{k}: weight must be a finite number, got {w!r}")
        if w < 0:
            raise ConfigError(f"{key}.{k}: weights must be non-negative, got {w!r}")
        out[k] = float(w)
    total = math.fsum(out.values())
    if abs(total - 1.0) > tolerance:
        listing = ", ".join(f"{k}={v:g}" for k, v in out.items())
        raise ConfigError(
            f"{key}: weights must sum to 1 (±{tolerance:g}), they sum to {total:.12g} ({listing})"
        )
    return out


def _check_dimensions(dimensions: list[str]) -> tuple[str, ...]:
    dims = tuple(str(d) for d in dimensions)
    if not dims:
        raise ConfigError("hri.dimensions is empty")
    dup = sorted({d for d in dims if dims.count(d) > 1})
    if dup:
        raise ConfigError(f"hri.dimensions: duplicate dimension(s) {dup}")
    return dims


def _check_labels(labels: Mapping[str, LabelConf], dims: tuple[str, ...]) -> dict[str, LabelConf]:
    if not labels:
        raise ConfigError("hri.labels is empty")
    out: dict[str, LabelConf] = {}
    for name, spec in labels.items():
        key = f"hri.labels.{name}"
        c = spec.contribution
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0 <= c <= 1:
            raise ConfigError(f"{key}.contribution must lie in [0, 1], got {c!r}")
        allowed = list(spec.allowed_dimensions) or list(spec.dimensions)
        for d in [*spec.dimensions, *allowed]:
            if d not in dims:
                raise ConfigError(f"{key}: unknown dimension {d!r}; dimensions are {list(dims)}")
        outside = [d for d in spec.dimensions if d not in allowed]
        if outside:
            raise ConfigError(f"{key}.dimensions {outside} not in allowed_dimensions {allowed}")
        if c > 0 and not spec.dimensions:
            raise ConfigError(
                f"{key}: contribution {c} > 0 but no dimensions: it would count nowhere"
            )
        out[str(name)] = replace(
            spec,
            contribution=float(c),
            dimensions=list(spec.dimensions),
            allowed_dimensions=allowed,
        )
    return out


def _check_feedback(
    fb: FeedbackConf, labels: Mapping[str, LabelConf], dims: tuple[str, ...]
) -> None:
    if fb.label not in labels:
        raise ConfigError(f"hri.feedback.label {fb.label!r} is not a configured label")
    if fb.dimension not in dims:
        raise ConfigError(f"hri.feedback.dimension {fb.dimension!r} is not a dimension")
    if list(labels[fb.label].dimensions) != [fb.dimension]:
        raise ConfigError(
            f"hri.labels.{fb.label}.dimensions must be [{fb.dimension}] (the feedback "
            f"dimension), got {list(labels[fb.label].dimensions)}"
        )
    for other, spec in labels.items():
        if other != fb.label and fb.dimension in spec.allowed_dimensions:
            raise ConfigError(
                f"hri.labels.{other}: only {fb.label} may count in the feedback dimension "
                f"{fb.dimension} (its score comes from validated feedback events)"
            )
    lam = fb.decay_lambda
    if (
        isinstance(lam, bool)
        or not isinstance(lam, (int, float))
        or not (math.isfinite(lam) and lam >= 0)
    ):
        raise ConfigError(f"hri.feedback.decay_lambda must be a finite number >= 0, got {lam!r}")
    if not (math.isfinite(fb.time_unit_days) and fb.time_unit_days > 0):
        raise ConfigError(f"hri.feedback.time_unit_days must be > 0, got {fb.time_unit_days!r}")
    q = fb.default_severity
    if q is not None and not 0 <= q <= 1:
        raise ConfigError(f"hri.feedback.default_severity must lie in [0, 1], got {q!r}")


def _check_floors(
    floors: list[FloorConf], labels: Mapping[str, LabelConf], feedback_label: str
) -> tuple[FloorConf, ...]:
    seen: set[str] = set()
    for i, f in enumerate(floors):
        key = f"hri.floors[{i}] ({f.name})"
        if f.name in seen:
            raise ConfigError(f"{key}: duplicate floor name {f.name!r}")
        seen.add(f.name)
        if f.label not in labels:
            raise ConfigError(f"{key}: unknown label {f.label!r}; labels are {sorted(labels)}")
        if not 0 <= f.floor <= 1:
            raise ConfigError(f"{key}.floor must lie in [0, 1], got {f.floor!r}")
        for bound in ("min_criticality", "max_criticality"):
            v = getattr(f, bound)
            if v is not None and v < 1:
                raise ConfigError(
                    f"{key}.{bound} must be >= 1 (criticality starts at 1), got {v!r}"
                )
        if (
            f.min_criticality is not None
            and f.max_criticality is not None
            and f.min_criticality > f.max_criticality
        ):
            raise ConfigError(
                f"{key}: min_criticality {f.min_criticality} > max_criticality {f.max_criticality}"
            )
        has_feedback_rule = f.min_feedback_events is not None or f.unresolved_feedback
        if has_feedback_rule and f.label != feedback_label:
            raise ConfigError(
                f"{key}: feedback conditions only apply to label "
                f"{feedback_label!r}, not {f.label!r}"
            )
        if f.min_feedback_events is not None and f.min_feedback_events < 1:
            raise ConfigError(
                f"{key}.min_feedback_events must be >= 1, got {f.min_feedback_events!r}"
            )
    return tuple(floors)


def _check_bands(bands: list[BandConf], scale: float) -> tuple[BandConf, ...]:
    if not (math.isfinite(scale) and scale > 0):
        raise ConfigError(f"hri.scale must be > 0, got {scale!r}")
    if not bands:
        raise ConfigError("hri.bands is empty")
    names = [b.name for b in bands]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"hri.bands: duplicate band name(s) {dup}")
    previous = -math.inf
    for i, b in enumerate(bands):
        if not b.upper > previous:
            raise ConfigError(
                f"hri.bands[{i}] ({b.name}): upper bounds must increase, got "
                f"{b.upper} after {previous}"
            )
        if not b.action:
            raise ConfigError(f"hri.bands[{i}] ({b.name}): empty action")
        previous = b.upper
    if bands[0].upper < 0:
        raise ConfigError(f"hri.bands[0] ({bands[0].name}): upper {bands[0].upper} < 0")
    if bands[-1].upper != scale:
        raise ConfigError(
            f"hri.bands: the last band's upper bound must equal hri.scale "
            f"({scale}), got {bands[-1].upper}: scores up to {scale} need a band"
        )
    return tuple(bands)
