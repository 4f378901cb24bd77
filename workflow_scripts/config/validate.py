"""Validate a config mapping: the JSON schema first, then the typed, cross-checked study."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema

from ..errors import PipelineError
from ..typed import parse_yaml
from .secrets import refuse_url_credentials
from .study import Study, load_study


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def schema_errors(config: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """One line per schema violation, each naming the dotted key."""
    validator = jsonschema.Draft202012Validator(schema)
    lines = []
    for err in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        if err.validator == "additionalProperties":
            extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
            allowed = ", ".join(sorted(err.schema.get("properties", {})))
            for key in extra:
                lines.append(f"{_key([*err.absolute_path, key])}: unknown key (allowed: {allowed})")
            continue
        lines.append(f"{_key(err.absolute_path)}: {err.message}")
    return lines


def load_config(config: dict[str, Any], schema_path: str | Path) -> Study:
    refuse_url_credentials(config)  # before the schema, whose messages may quote values
    schema = parse_yaml(Path(schema_path).read_text(encoding="utf-8"))
    errors = schema_errors(config, schema)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise PipelineError(errors[0] + more)
    return load_study(config)
