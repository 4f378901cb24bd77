"""Paths on a rule's command line: the user's own folders (an external checkpoint, a local source,
the checkout itself) may hold spaces, quotes or `$`; the paths the workflow builds under ``results/``
are made of the config's names, which are refused where they would need quoting.

A word that needs no quoting is kept as it is: quoting it would change the params a job recorded and
rerun it. Non-ASCII letters need none.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

from ..errors import PipelineError

_PLAIN = re.compile(r"[\w@%+=:,./~-]+")
# `~` at a word's start, or after `=` or `:`, is a home directory to the shell
_HOME = re.compile(r"(^|[=:])~")


def plain(word: str) -> bool:
    """Whether the shell reads ``word`` as one word, unchanged."""
    return bool(_PLAIN.fullmatch(word)) and not _HOME.search(word)


def shell_word(word: str) -> str:
    """``word`` as one word of a shell command: quoted only where the shell would split or expand it.
    A leading ``~/`` stays outside the quotes: the shell expands it to the home directory, as before."""
    if word.startswith("~/"):
        return "~/" + shell_word(word[2:])
    return word if plain(word) else shlex.quote(word)


def check_plain_names(where: str, names: Iterable[str]) -> None:
    """Names that become path segments under ``results/`` (corpora, vocabularies, models, tasks, source
    files): refuse one that a rule's command would split or expand."""
    for name in names:
        if not plain(name):
            raise PipelineError(
                f"{where}.{name}: {name!r} would need quoting on a command line; name it with letters,"
                " digits and '_', '-' or '.' only (no spaces, quotes, '$', '*' or a leading '~')"
            )
