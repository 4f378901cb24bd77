"""Typed configuration: dataclasses, their validation, and the JSON schema made from them."""

from .typed import load_settings, parse, to_dict

__all__ = ["load_settings", "parse", "to_dict"]
