"""Generate the JSON schema of config.yaml from the typed settings dataclasses.

The schema in schemas/config.schema.yaml is this module's output; a test keeps the
two in sync, so help texts and defaults are written once, in the dataclasses.
Regenerate with ``python -m workflow_scripts.config.schema > schemas/config.schema.yaml``.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

import yaml

from ..finetune.settings import FinetuneSettings
from ..tasks.spec import TaskSpec
from ..typed import to_dict
from .study import FINETUNE_PRECEDENCE, Study

_SCALARS = {bool: "boolean", int: "integer", float: "number", str: "string"}


def type_schema(tp: Any) -> dict[str, Any]:
    origin = get_origin(tp)
    if tp is Any:
        return {}
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin in (Union, types.UnionType):
        options = [type_schema(a) for a in get_args(tp) if a is not type(None)]
        schema = options[0] if len(options) == 1 else {"anyOf": options}
        if type(None) in get_args(tp):
            schema = {"anyOf": [schema, {"type": "null"}]}
        return schema
    if origin in (list, tuple):
        return {"type": "array", "items": type_schema(get_args(tp)[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": type_schema(get_args(tp)[1])}
    if dataclasses.is_dataclass(tp):
        return dataclass_schema(tp)
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    raise TypeError(f"no schema for {tp!r}")


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return dataclasses.MISSING
    if dataclasses.is_dataclass(value):
        return dataclasses.MISSING
    return to_dict(value)


def dataclass_schema(cls: type, required: bool = True) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {}
    needed = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        prop = type_schema(hints[f.name])
        if f.metadata.get("help"):
            prop = {"description": f.metadata["help"], **prop}
        default = _default(f)
        if default is dataclasses.MISSING:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                needed.append(f.name)
        else:
            prop["default"] = default
        props[f.name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if doc := (cls.__doc__ or "").strip():
        if not doc.startswith(cls.__name__ + "("):
            schema = {"description": doc.splitlines()[0], **schema}
    if needed and required:
        schema["required"] = needed
    return schema


def finetune_keys() -> dict[str, Any]:
    """A mapping of some fine-tuning keys (one level of docs/settings-precedence.md): no defaults."""
    keys = dataclass_schema(FinetuneSettings, required=False)
    for prop in keys["properties"].values():
        prop.pop("default", None)
    return keys


def study_schema() -> dict[str, Any]:
    schema = dataclass_schema(Study)
    task_entry = dataclass_schema(TaskSpec, required=False)
    task_entry["properties"]["seeds"] = {
        "description": "Fine-tuning seeds of this task (default: the top-level seeds).",
        "type": "array",
        "items": {"type": "integer"},
    }
    task_entry["properties"]["finetune"] = {**finetune_keys(), "description": FINETUNE_PRECEDENCE}
    schema["properties"]["tasks"]["additionalProperties"] = task_entry
    model_entry = schema["properties"]["models"]["additionalProperties"]["properties"]
    model_entry["finetune"] = {**finetune_keys(), "description": model_entry["finetune"]["description"]}
    model_entry["finetune_per_task"]["additionalProperties"] = finetune_keys()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Study configuration of the biomedical language-model workflow",
        **schema,
    }


def render() -> str:
    header = (
        "# Generated from the settings dataclasses by `python -m workflow_scripts.config.schema`;\n"
        "# edit the dataclasses (their help texts and defaults), not this file.\n"
    )
    return header + yaml.safe_dump(study_schema(), sort_keys=False, allow_unicode=True, width=100)


if __name__ == "__main__":
    sys.stdout.write(render())
