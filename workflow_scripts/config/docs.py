"""Render docs/configuration.md, every key of config.yaml, from the JSON schema.

The page is this module's output on ``schemas/config.schema.yaml`` (itself generated from the
settings dataclasses by ``schema.py``); a test keeps the committed page equal to it, so a key's
type, default and description are written once, in its dataclass. Regenerate with
``python -m workflow_scripts.config.docs > docs/configuration.md`` after ``make schema``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"

INTRO = """\
<!-- Generated from schemas/config.schema.yaml by `python -m workflow_scripts.config.docs`;
edit the settings dataclasses' help texts and defaults, run `make schema`, then regenerate. -->
# Configuration

A study is one `config.yaml`: the repository's own is the full study of the papers, and
`demo/config.yaml` the embedded demo. This page lists every key with its type, its default and
what it does; the same descriptions are in `schemas/config.schema.yaml`. The config is checked
before any job starts: an unknown key, a wrong type, or a model that names a missing vocabulary,
corpus or teacher stops with one line naming the key, e.g.

```
error: config: models.ours-base-pm-voc.vocab: 'pm-bpe' is not a vocabulary of this config (known: ...)
```

A key written `<name>` is one you choose (a corpus, a model, a task); `[]` marks the entries of
a list. A fine-tuning setting can be given at four levels (a task in the config, the task's
registry entry, the model, the top level): which one wins is in
[Which fine-tuning setting wins](settings-precedence.md). What each study looks like in full:
[Studies](studies.md), [Pretraining and distillation](pretraining.md),
[Corpora and tasks](data.md).
"""


def _escape(text: str) -> str:
    """Markdown table cell text: pipes escaped everywhere, and outside code spans the characters
    GitHub would read as HTML or emphasis."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    for i, part in enumerate(parts):
        if not part.startswith("`"):
            part = part.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("*", r"\*")
        parts[i] = part.replace("|", r"\|")
    return "".join(parts)


def type_text(schema: dict[str, Any]) -> str:
    """A schema's type in words: `integer or null`, `list of string`, `map of name to object`."""
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(type_text(option) for option in schema["anyOf"])
    kind = schema.get("type")
    if kind == "array":
        return f"list of {type_text(schema.get('items', {}))}"
    if kind == "object" and "properties" not in schema and isinstance(schema.get("additionalProperties"), dict):
        return f"map of name to {type_text(schema['additionalProperties'])}"
    return kind or "any"


def _default_text(schema: dict[str, Any]) -> str:
    if "default" not in schema:
        return ""
    return f"`{json.dumps(schema['default'], separators=(', ', ': '))}`"


def _description(schema: dict[str, Any]) -> str:
    """The key's own description, else that of its one described form (e.g. an object option)."""
    if "description" in schema:
        return schema["description"]
    described = [o["description"] for o in schema.get("anyOf", []) if "description" in o]
    return described[0] if len(described) == 1 else ""


def _nested(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The objects inside a key's schema whose keys are listed under it, each with its path:
    the key's own properties, those of an object option, a map's entries, a list's items."""
    if "properties" in schema:
        yield path, schema
    for option in schema.get("anyOf", []):
        yield from _nested(option, path)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nested(schema["additionalProperties"], f"{path}.<name>")
    if isinstance(schema.get("items"), dict):
        yield from _nested(schema["items"], f"{path}[]")


def rows(schema: dict[str, Any], path: str) -> Iterator[tuple[str, str, str, str]]:
    """(key path, type, default, description) of every key below ``path``, depth first."""
    for inner_path, inner in _nested(schema, path):
        for name, prop in inner["properties"].items():
            key = f"{inner_path}.{name}"
            yield key, type_text(prop), _default_text(prop), _description(prop)
            yield from rows(prop, key)


def section(name: str, schema: dict[str, Any]) -> str:
    """One top-level key: its heading, description, type and default, then a table of its keys."""
    lines = [f"## {name}", "", _escape(_description(schema)), ""]
    default = _default_text(schema)
    lines += [f"Type: {_escape(type_text(schema))}." + (f" Default: {default}." if default else ""), ""]
    table = list(rows(schema, name))
    if table:
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        lines += [f"| `{key}` | {_escape(kind)} | {default} | {_escape(text)} |" for key, kind, default, text in table]
        lines.append("")
    return "\n".join(lines)


def render(schema: dict[str, Any]) -> str:
    """The whole page: the introduction, a list of the top-level keys, and a section per key."""
    keys = list(schema["properties"])
    index = "\n".join(f"- [`{key}`](#{key})" for key in keys)
    sections = "\n".join(section(key, schema["properties"][key]) for key in keys)
    return f"{INTRO}\n## Top-level keys\n\n{index}\n\n{sections}"


def render_file(path: Path = SCHEMA) -> str:
    return render(yaml.safe_load(path.read_text(encoding="utf-8")))


if __name__ == "__main__":
    sys.stdout.write(render_file())
