"""docs/configuration.md: every config key with its type, default and description, generated
from the schema and kept current."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from workflow_scripts.config import docs

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "configuration.md"


def test_page_is_generated_from_the_schema():
    assert PAGE.read_text() == docs.render_file(), (
        "docs/configuration.md is stale: run `python -m workflow_scripts.config.docs > docs/configuration.md`"
    )


def _property_paths(schema: dict, path: str):
    """Every key of the schema as the page writes it, walked independently of the generator."""
    forms = [schema, *schema.get("anyOf", [])]
    for form in forms:
        for name, prop in form.get("properties", {}).items():
            yield f"{path}.{name}"
            yield from _property_paths(prop, f"{path}.{name}")
        if isinstance(form.get("additionalProperties"), dict):
            yield from _property_paths(form["additionalProperties"], f"{path}.<name>")
        if isinstance(form.get("items"), dict):
            yield from _property_paths(form["items"], f"{path}[]")


def test_every_key_of_the_schema_has_a_row():
    schema = yaml.safe_load((ROOT / "schemas" / "config.schema.yaml").read_text())
    rows = set(re.findall(r"^\| `([^`]+)` \|", docs.render(schema), flags=re.M))
    expected = {p for top, prop in schema["properties"].items() for p in _property_paths(prop, top)}
    assert expected and expected <= rows, sorted(expected - rows)[:10]
    assert "models.<name>.pretrain.phases[].seq_len" in rows


def test_a_row_states_type_default_and_description_in_markdown_that_renders():
    schema = {
        "properties": {
            "runs": {
                "description": "Runs by name.",
                "type": "object",
                "default": {},
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "size": {
                            "description": "rows | columns of <file>, `a|b` and *all*",
                            "anyOf": [{"type": "integer"}, {"enum": ["auto"]}, {"type": "null"}],
                            "default": None,
                        },
                        "lengths": {"type": "array", "items": {"type": "integer"}, "default": [128, 512]},
                    },
                },
            }
        }
    }
    page = docs.render(schema)
    assert "- [`runs`](#runs)" in page and "## runs\n\nRuns by name." in page
    assert "Type: map of name to object. Default: `{}`." in page
    size_row = r'| `runs.<name>.size` | integer or `"auto"` or null | `null` |'
    assert size_row + r" rows \| columns of &lt;file&gt;, `a\|b` and \*all\* |" in page
    assert "| `runs.<name>.lengths` | list of integer | `[128, 512]` |  |" in page
