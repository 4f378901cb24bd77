"""Turn plain YAML data into typed dataclasses, naming the offending key on any error.

Settings classes are ordinary dataclasses whose fields carry a ``help`` text in
``field(metadata={"help": ...})``. Supported field types: bool, int, float, str,
``Literal[...]``, ``Optional[X]``, ``list[X]``, ``tuple[X, ...]``, ``dict[str, X]``
and nested dataclasses. A dataclass may define ``validate(self, where)`` for
cross-field checks; it raises PipelineError.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import yaml

from .errors import PipelineError

T = TypeVar("T")


def help_field(text: str, **kw: Any) -> Any:
    """A dataclass field documented with `text` (shown in the generated schema)."""
    return dataclasses.field(metadata={"help": text}, **kw)


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(tp))
    if origin in (list, tuple):
        return f"a list of {_type_name(get_args(tp)[0])}"
    if origin is dict:
        return f"a mapping of {_type_name(get_args(tp)[1])}"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    if tp is type(None):
        return "null"
    return getattr(tp, "__name__", str(tp))


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin is Literal:
        if value not in get_args(tp):
            raise PipelineError(f"{where}: {value!r} is not {_type_name(tp)}")
        return value
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, value, where)
            except PipelineError as exc:
                errors.append(str(exc))
        if len(errors) == 1:  # an optional value: its own error names the nested key
            raise PipelineError(errors[0])
        raise PipelineError(f"{where}: {value!r} is not {_type_name(tp)}")
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise PipelineError(f"{where}: expected {_type_name(tp)}, got {value!r}")
        (item,) = get_args(tp)[:1]
        items = [_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(value, dict):
            raise PipelineError(f"{where}: expected {_type_name(tp)}, got {value!r}")
        _, vt = get_args(tp)
        return {str(k): _convert(vt, v, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return parse(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise PipelineError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise PipelineError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise PipelineError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise PipelineError(f"{where}: expected a string, got {value!r}")
        return value
    raise TypeError(f"unsupported settings type {tp!r} at {where}")


@functools.cache
def _init_fields(cls: type) -> tuple[dict[str, Any], dict[str, dataclasses.Field]]:
    """A settings class's resolved field types and its init fields: once per class (resolving
    the annotations is most of a parse, and the Snakefile parses thousands of run settings)."""
    return typing.get_type_hints(cls), {f.name: f for f in dataclasses.fields(cls) if f.init}


def parse(cls: type[T], data: Any, where: str) -> T:
    """Build ``cls`` from a mapping; unknown keys, missing required keys and wrong types raise
    PipelineError naming the dotted key path ``where``."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PipelineError(f"{where}: expected a mapping, got {data!r}")
    hints, fields = _init_fields(cls)
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise PipelineError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(fields))})")
    kwargs = {}
    for name, f in fields.items():
        key = f"{where}.{name}" if where else name
        if name in data:
            kwargs[name] = _convert(hints[name], data[name], key)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise PipelineError(f"{key}: required key is missing")
    obj = cls(**kwargs)
    validate = getattr(obj, "validate", None)
    if callable(validate):
        validate(where)
    return obj


def to_dict(obj: Any) -> Any:
    """Plain-data form of a settings object (for resolved-settings YAML and provenance)."""
    if dataclasses.is_dataclass(obj):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return obj


def view(cls: type[T], entry: Any, **values: Any) -> T:
    """``cls`` filled from the same-named attributes of ``entry``, ``values`` taking precedence: the part
    of a larger settings object that one step reads."""
    names = [f.name for f in dataclasses.fields(cls) if f.init and f.name not in values]
    return cls(**{name: getattr(entry, name) for name in names if hasattr(entry, name)}, **values)


# libyaml's parser where PyYAML was built with it: the same data, read several times faster
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str) -> Any:
    """``yaml.safe_load(text)``, through libyaml where it is there; an error is raised as
    PyYAML's own parser words it (with the offending line quoted)."""
    try:
        return yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError:
        return yaml.safe_load(text)


def read_yaml(path: str | Path) -> Any:
    """The data of a settings YAML file; a missing or unparsable file names itself."""
    path = Path(path)
    if not path.is_file():
        raise PipelineError(f"{path}: settings file not found")
    try:
        return parse_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise PipelineError(f"{path}: not valid YAML ({exc})") from exc


def load_settings(path: str | Path, cls: type[T], key: str | None = None) -> T:
    """Read a resolved-settings YAML file (optionally one top-level ``key`` of it) into ``cls``."""
    data = read_yaml(path)
    if key is not None:
        if not isinstance(data, dict) or key not in data:
            raise PipelineError(f"{path}: missing top-level key {key!r}")
        data = data[key]
    return parse(cls, data, f"{path}:{key}" if key else str(path))
