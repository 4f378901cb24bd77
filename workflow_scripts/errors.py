"""The one exception type that reaches users as a one-line message."""


class PipelineError(Exception):
    """Bad input or configuration. The message names the file, line or key and what to do."""
