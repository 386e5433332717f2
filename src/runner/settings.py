"""Parts whose parameters are dataclass fields, and the config schemas derived from them.

Why: a configurable part (a verifier, an LLM judge) has one place per parameter, its class
field. The generated keyword-only ``__init__`` takes exactly those names, a subclass
declares only its own (`settings_class`), and the structured-config schema Hydra checks a
YAML file or a CLI override against is derived from the same fields (`schema`), so a type
or default is never written twice. Shared by `runner.verifiers` and `runner.claims`, which
may not import each other.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass, make_dataclass
from typing import Any, TypeVar, get_type_hints

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
        return dataclass(kw_only=True, eq=False, repr=False)(cls)

    return decorate


def _default(spec: Field) -> Any:
    if spec.default is not MISSING:
        return field(default=spec.default)
    if spec.default_factory is not MISSING:
        return field(default_factory=spec.default_factory)
    return field(default="???")  # OmegaConf's mandatory value: required at compose time


def schema(cls: type, name: str, package: str, module: str) -> type:
    """The structured config of settings class `cls`: ``_target_`` plus one key per field.

    Parameters
    ----------
    cls : type
        A `settings_class` dataclass.
    name : str
        The schema's class name (``DebertaNLIConf``).
    package : str
        Where `cls` is public: ``_target_`` is ``<package>.<cls name>``.
    module : str
        The module the schema lives in (its ``__module__``).

    Types and defaults are the class's own (`typing.get_type_hints` resolves the string
    annotations; OmegaConf 2.3 types ``X | None`` as Optional and leaves ``Any``
    unchecked); a field without a default is mandatory (``???``).
    """
    hints = get_type_hints(cls)
    target = f"{package}.{cls.__name__}"
    specs: list[tuple[str, Any, Any]] = [("_target_", str, field(default=target))]
    specs += [(f.name, hints[f.name], _default(f)) for f in fields(cls)]
    conf = make_dataclass(name, specs)
    conf.__module__ = module
    conf.__doc__ = f"`{target}` (derived from its fields)."
    return conf
