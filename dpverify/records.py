"""Frozen records: the frozen dataclasses of dpverify, made cheaply at import (issue 25,
point 5: start-up).

`@record` is `@dataclass(frozen=True)` with the same fields, defaults, `field(...)`
options, `__post_init__`, `dataclasses.fields`, `replace`, `asdict`, pickling and the
same `__init__`, `__repr__`, `__eq__` and `__hash__` behaviour, but the generated code
is made differently. `dataclass(frozen=True)` compiles five methods for every class
when its module is imported (about 0.8 ms a class on Python 3.11; a small `verify`
imports some 55 of them, 43 ms of its 190). A record compiles only its `__init__`, and
only when the class is first instantiated (most classes of a run are never made); its
`__repr__`, `__eq__`, `__hash__` and frozen `__setattr__` / `__delattr__` are shared
functions reading a per-class tuple of field names. Not supported, a TypeError at the
class statement: `InitVar` and keyword-only fields, and an `__eq__` or `__hash__` of the
class's own where `eq=True`.
"""

from __future__ import annotations

import dataclasses
import operator
import reprlib
import threading
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError
from typing import Any, TypeVar, cast, dataclass_transform, overload

__all__ = ["record"]

T = TypeVar("T")

_LOCK = threading.Lock()
_FACTORY = object()  # the default of an __init__ parameter whose field has a factory


@overload
def record(cls: type[T], /) -> type[T]: ...
@overload
def record(*, eq: bool = True, repr: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, Field))
def record(cls: type[T] | None = None, /, *, eq: bool = True,
           repr: bool = True) -> type[T] | Callable[[type[T]], type[T]]:
    """`@record`, `@record(eq=False)`, `@record(repr=False)`: a frozen dataclass (module
    docstring); `eq=False` keeps identity equality and hashing, `repr=False` object's
    repr, as for `dataclass`."""

    def wrap(cls: type[T]) -> type[T]:
        return _make(cls, eq=eq, repr=repr)

    return wrap if cls is None else wrap(cls)


def _make(cls: type[T], *, eq: bool, repr: bool) -> type[T]:
    own = cls.__dict__
    if eq and (own.get("__eq__") is not None or own.get("__hash__") is not None):
        raise TypeError(f"{cls.__qualname__}: a record with its own __eq__ or __hash__ "
                        "takes eq=False")
    for name in ("__init__", "__setattr__", "__delattr__"):
        if name in own:
            raise TypeError(f"{cls.__qualname__}: a record makes its own {name}")
    # The fields, defaults and checks of dataclasses, without its generated methods. A
    # class without a docstring gets one naming its parameters, as from dataclass, but
    # not through inspect.signature of object's __init__ (which compiles tokenize's
    # regular expressions: some 4 ms of a small run's start-up) and with the fields.
    undocumented = not cls.__doc__
    if undocumented:
        cls.__doc__ = cls.__qualname__
    dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = dataclasses.fields(cast(Any, cls))
    if undocumented:
        cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in fields if f.init)})"
    declared = cast(Any, cls).__dataclass_fields__
    for name in declared.keys() - {f.name for f in fields}:  # ClassVar and InitVar
        if "InitVar" in str(declared[name].type):
            raise TypeError(f"{cls.__qualname__}.{name}: a record takes no InitVar")
    _check_parameters(cls, fields)
    made: dict[str, Any] = {"__init__": _lazy_init(cls), "__setattr__": _frozen_setattr,
                            "__delattr__": _frozen_delattr}
    if repr:
        made.update(__record_repr__=tuple(f.name for f in fields if f.repr), __repr__=_repr)
    if eq:
        compared = tuple(f.name for f in fields if f.compare)
        hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        made.update(__record_key__=staticmethod(_getter(compared)),
                    __record_hash_key__=staticmethod(_getter(hashed)),
                    __eq__=_eq, __hash__=_hash)
    for name, value in made.items():
        setattr(cls, name, value)
    return cls


def _check_parameters(cls: type, fields: tuple[Field, ...]) -> None:
    """The TypeErrors of `dataclass` for fields that `__init__` cannot take, raised at the
    class statement although the `__init__` is compiled later."""
    seen_default = None
    for f in fields:
        if f.kw_only is True:
            raise TypeError(f"{cls.__qualname__}.{f.name}: a record takes no keyword-only "
                            "fields")
        if not f.init:
            continue
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen_default = f.name
        elif seen_default is not None:
            raise TypeError(f"{cls.__qualname__}: non-default field {f.name!r} follows "
                            f"default field {seen_default!r}")


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of these attributes (always a tuple, as dataclasses compare)."""
    if len(names) >= 2:
        return operator.attrgetter(*names)
    if names:
        name = names[0]
        return lambda obj: (getattr(obj, name),)
    return lambda obj: ()


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    parts = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_repr__)
    return f"{self.__class__.__qualname__}({parts})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        return self.__record_key__(self) == other.__record_key__(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__record_hash_key__(self))


def _lazy_init(cls: type) -> Callable[..., None]:
    """A stand-in `__init__` that compiles the class's own on its first call."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        with _LOCK:
            init = cls.__dict__["__init__"]
            if init is __init__:
                init = _compiled_init(cls)
                type.__setattr__(cls, "__init__", init)
        init(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _compiled_init(cls: type) -> Callable[..., None]:
    """The `__init__` that `dataclass(frozen=True)` makes: each field set with
    object.__setattr__, a factory called when its parameter is left out, the fields
    that `__init__` does not take set from their defaults, then `__post_init__`."""
    names: dict[str, Any] = {"_set": object.__setattr__, "_FACTORY": _FACTORY}
    params, body = ["self"], []
    for f in dataclasses.fields(cast(Any, cls)):
        param, value = _field_code(f, names)
        if param is not None:
            params.append(param)
        if value is not None:
            body.append(f"    _set(self, {f.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass")
    exec(source, names)  # noqa: S102 - field names only: identifiers checked by dataclasses
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    return init


def _field_code(f: Field, names: dict[str, Any]) -> tuple[str | None, str | None]:
    """Field `f`'s parameter of __init__ (None: not taken) and the expression assigned to
    it (None: not assigned); the defaults and factories they name are put in `names`."""
    default, factory = f"_default_{f.name}", f"_factory_{f.name}"
    if f.default_factory is not MISSING:
        names[factory] = f.default_factory
        if f.init:
            return f"{f.name}=_FACTORY", f"{factory}() if {f.name} is _FACTORY else {f.name}"
        return None, f"{factory}()"
    if f.default is not MISSING:
        names[default] = f.default
        return (f"{f.name}={default}", f.name) if f.init else (None, default)
    return (f.name, f.name) if f.init else (None, None)
