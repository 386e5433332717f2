"""Parts whose parameters are dataclass fields, and the config schemas derived from them.

Why: a configurable part (a verifier, an LLM judge) has one place per parameter, its class
field. The generated keyword-only ``__init__`` takes exactly those names, a subclass
declares only its own (`settings_class`), and the structured-config schema Hydra checks a
YAML file or a CLI override against is derived from the same fields (`derive`), so a type
or default is never written twice.

The same derivation covers every kind of part, so every value has one home, its class:
a `settings_class` dataclass (verifiers, judges), a class with an ``__init__`` (gates,
splitters, the span detector), a loader function (data sets), and a plain dataclass that
is a record of settings (routing, bootstrap, HRI, detector training, study ``Params``),
which is its own schema. A conf YAML names the class in its defaults list and keeps only
what differs from it (`runner.config.register_configs`).
"""

from __future__ import annotations

import collections.abc
import copy
import difflib
import enum
import functools
import importlib
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, make_dataclass
from typing import Any, Optional, TypeVar, get_type_hints

T = TypeVar("T")


def settings_class(**defaults: Any) -> Callable[[type[T]], type[T]]:
    """Make a class a keyword-only dataclass whose fields are its parameters.

    The generated ``__init__`` takes the fields as explicit keywords and calls
    ``__post_init__`` (where a class validates and prepares, e.g. resolves paths);
    equality and repr stay the class's own. `defaults` overrides the default of an
    inherited field (its type and metadata stay the parent's)::

        @settings_class(batch_size=2)
        class Mine(Base):
            my_setting: str = "x"

    Raises
    ------
    TypeError
        When `defaults` names a field the parent does not have (a misspelt override).
    """

    def decorate(cls: type[T]) -> type[T]:
        parent = cls.__mro__[1]
        inherited = {f.name: f for f in fields(parent)} if is_dataclass(parent) else {}
        hints = get_type_hints(parent) if inherited else {}
        own = dict(inspect.get_annotations(cls))
        for name, value in defaults.items():
            if name not in inherited:
                raise TypeError(f"{cls.__name__}: no inherited setting {name!r} to override")
            own[name] = hints[name]
            setattr(cls, name, field(default=value, metadata=inherited[name].metadata))
        cls.__annotations__ = own
        setattr(cls, PART, True)
        return dataclass(kw_only=True, eq=False, repr=False)(cls)

    return decorate


OPEN_KEYS = "open_keys"
"""Field metadata of a ``dict`` whose keys are the user's to choose.

Why: Hydra closes every dict before it applies the command line, so the documented
``dataset.columns.id=request_id`` (and ``'dataset.columns={id: request_id}'``) would be
refused as "not in struct" and only the ``+`` form would work. A field declared with
``field(default_factory=dict, metadata={OPEN_KEYS: True})`` keeps its own node open
(`runner.config.register_configs`); whoever reads it still checks its keys. Derived
schemas mark every mapping setting so (`derive`).
"""

SEED = 13
"""The project's one default seed: every seed and ``random_state`` default reads it, and the
run config's ``seed`` (which every conf file follows as ``${seed}``) defaults to it."""

CHECK = "check_settings"
"""Name of a part's own cheap check of its settings (a class attribute, or an attribute a
loader function gets from `checked_by`), called with the settings as keywords by the
derived schema's ``__post_init__``: the one place a part's values are checked."""

CONVERT = "_convert_"
"""A class attribute a part may set (``_convert_ = "all"``) that its derived schema keeps as
Hydra's ``_convert_`` key (lists reach the part as plain Python lists)."""


def checked_by(check: Callable[..., Any]) -> Callable[[T], T]:
    """Declare `check` as the cheap check of a loader function's settings (`CHECK`)."""

    def decorate(fn: T) -> T:
        setattr(fn, CHECK, check)
        return fn

    return decorate


def import_path(path: str) -> Any:
    """The object a dotted path names (``runner.gates.LogitGate``): the longest importable
    module prefix, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as exc:
            if exc.name and not path.startswith(exc.name):
                raise  # the module exists but one of its own imports is missing
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(f"{path!r} names no importable object")


def class_name(kind: type) -> str:
    """The dotted path a user can grep: a derived schema is named by its part's path."""
    return kind.__name__ if "." in kind.__name__ else f"{kind.__module__}.{kind.__qualname__}"


def unknown_key(where: str, key: str, kind: type) -> str:
    """``<where>.<key>``: not a field of `kind`, with the closest field and all fields."""
    names = [f.name for f in fields(kind)]
    close = difflib.get_close_matches(key, names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    valid = ", ".join(n for n in names if not n.startswith("_"))
    name = class_name(kind)
    return f"{where}.{key}: unknown key ({name} has no {key!r}); {hint}valid keys: {valid}"


def is_record(obj: Any) -> bool:
    """A plain dataclass that is not a part: its own schema, nothing is instantiated from it
    (``routing``, ``bootstrap``, ``hri``, ``detector``, ``train``, a study's ``Params``)."""
    return isinstance(obj, type) and is_dataclass(obj) and not getattr(obj, PART, False)


PART = "__settings_part__"
"""Class attribute marking a dataclass as a part built by ``_target_`` (a `settings_class`,
a `runner.studies.Study`), not a record of settings."""
_SIMPLE = (int, float, str, bool)


def config_type(hint: Any) -> Any:
    """`hint` as a type OmegaConf can check, or ``Any`` where it cannot.

    Rules: int, float, str, bool and enums stay; ``X | None`` stays optional when X stays;
    an enum-or-str is the enum; a sequence (list, tuple, `Sequence`) becomes
    ``list[item]``, a mapping ``dict[str, value]``; a union of several kinds, a class or a
    path-like becomes ``Any`` (unchecked at compose time; the part checks it).
    """
    if hint is Any or hint is None or hint is type(None):
        return Any
    if isinstance(hint, type) and (issubclass(hint, _SIMPLE) or issubclass(hint, enum.Enum)):
        return hint
    if is_record(hint):
        return hint  # typed settings (a study's `Params`, `RoutingConf`): checked key by key
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        enums = [a for a in kept if isinstance(a, type) and issubclass(a, enum.Enum)]
        if len(enums) == 1 and set(kept) == {enums[0], str}:
            kept = enums  # an enum or its value's name: OmegaConf reads both as the enum
        if len(kept) != 1:
            return Any
        inner = config_type(kept[0])
        if inner is Any or type(None) not in args:
            return inner
        return Optional[inner]  # noqa: UP045 (OmegaConf reads it)
    if origin in (list, tuple, collections.abc.Sequence) or hint in (list, tuple):
        items = [a for a in args if a is not Ellipsis]
        item = config_type(items[0]) if len(items) == 1 else Any
        return list[item]
    if origin in (dict, collections.abc.Mapping) or hint in (dict, collections.abc.Mapping):
        value = config_type(args[1]) if len(args) == 2 else Any
        return dict[str, value]
    return Any


def _field_default(value: Any, metadata: dict[str, Any]) -> Any:
    """A dataclass field for default `value`: containers by factory (a fresh copy each time),
    no default as OmegaConf's mandatory ``???``."""
    if value is inspect.Parameter.empty or value is MISSING:
        return field(default="???", metadata=metadata)
    if isinstance(value, list | tuple):
        items = list(value)
        return field(default_factory=lambda: list(items), metadata=metadata)
    if isinstance(value, dict | types.MappingProxyType):
        pairs = dict(value)
        return field(default_factory=lambda: dict(pairs), metadata=metadata)
    if is_dataclass(value):  # a record's defaults (a study's `Params()`)
        return field(default_factory=lambda: copy.deepcopy(value), metadata=metadata)
    return field(default=value, metadata=metadata)


def fields_of(cls: type, **defaults: Any) -> list[tuple[str, Any, Any]]:
    """`cls`'s dataclass fields as `make_dataclass` specs, `defaults` overriding some defaults.

    For a record that carries another class's settings among its own (the detector's
    training config carries `InputRule`'s and `TrainSettings`' fields): the fields are
    declared once, in `cls`; only the defaults that differ are written at the record.

    Raises
    ------
    TypeError
        When `defaults` names a field `cls` does not have.
    """
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(defaults) - names)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {unknown}")
    hints = get_type_hints(cls)
    out = []
    for f in fields(cls):
        value = defaults.get(f.name, f.default)
        if f.name not in defaults and f.default is MISSING:
            out.append(
                (f.name, config_type(hints[f.name]), field(default_factory=f.default_factory))
            )
        else:
            out.append((f.name, config_type(hints[f.name]), field(default=value)))
    return out


def parameters(target: Any) -> list[tuple[str, Any, Any]]:
    """(name, config type, default) of every setting of `target`, in declaration order.

    A dataclass: its ``init`` fields (types by `typing.get_type_hints`); a class: its
    ``__init__`` parameters; a function: its parameters. ``self``, ``*args`` and
    ``**kwargs`` are no settings. A parameter without an annotation is ``Any``.
    """
    if is_dataclass(target):
        hints = get_type_hints(target)
        out = []
        for f in fields(target):
            if not f.init:
                continue
            default = f.default
            if default is MISSING and f.default_factory is not MISSING:
                default = f.default_factory()
            out.append((f.name, config_type(hints[f.name]), default))
        return out
    fn = target.__init__ if isinstance(target, type) else target
    hints = get_type_hints(fn)
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out.append((p.name, config_type(hints.get(p.name, Any)), p.default))
    return out


@functools.cache
def derive(path: str) -> type:
    """The structured config of the part or record `path` names; its one source of truth.

    - A plain dataclass (a record such as ``RoutingConf``) is its own schema: returned as is.
    - Anything else (a `settings_class` dataclass, a class with an ``__init__``, a loader
      function) gets a dataclass with ``_target_`` = `path`, ``_convert_`` when the class
      declares one (`CONVERT`), then one field per setting (`parameters`: the class's or
      function's own types and defaults; a mapping's keys are left open, `OPEN_KEYS`).
      When the target has a check (`CHECK`), the schema's ``__post_init__`` calls it with
      the settings, so a value is refused at the pre-flight check, by the part's own rule.
    """
    target = import_path(path)
    if is_record(target):
        return target
    specs: list[tuple[str, Any, Any]] = [("_target_", str, field(default=path))]
    convert = getattr(target, CONVERT, None)
    if isinstance(convert, str):
        specs.append(("_convert_", str, field(default=convert)))
    for name, kind, default in parameters(target):
        opened = {OPEN_KEYS: True} if typing.get_origin(kind) is dict else {}
        specs.append((name, kind, _field_default(default, opened)))
    namespace = {"__post_init__": _check_settings} if hasattr(target, CHECK) else {}
    # Named by the path a YAML writes (``runner.gates.LogitGate``), so a message that names
    # the schema ("Key 'x' not in 'runner.gates.LogitGate'") names a class grep finds. It is
    # no attribute of any module: a launcher (submitit, Ray: cloudpickle) sends it to a job
    # process by value, and its `__post_init__` finds the check by that name there.
    conf = make_dataclass(path, specs, namespace=namespace)
    conf.__module__ = __name__
    conf.__doc__ = f"`{path}`'s settings (derived from its signature: `runner.settings.derive`)."
    return conf


def _check_settings(self: Any) -> None:
    """A derived schema's ``__post_init__``: the settings checked by the `CHECK` of the part
    it was derived from (its name is that part's path)."""
    values = {f.name: getattr(self, f.name) for f in fields(self)}
    values = {k: v for k, v in values.items() if k not in ("_target_", "_convert_")}
    if any(isinstance(v, str) and v == "???" for v in values.values()):
        return  # a required value left unset: `check_required` names it
    getattr(import_path(type(self).__name__), CHECK)(**values)
