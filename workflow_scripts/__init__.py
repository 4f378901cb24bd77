"""The Python package behind the biomedical language-model workflow."""

__version__ = "0.1.0"
