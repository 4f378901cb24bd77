"""Credentials for credentialed downloads (PhysioNet), from the environment or a netrc file.

They are handed to urllib's password manager for one URL prefix only, and never logged,
recorded or put into an error message.
"""

from __future__ import annotations

import netrc
import os
from pathlib import Path
from urllib.parse import urlsplit

# Host suffix -> environment variables holding user name and password.
ENV_VARS = {"physionet.org": ("PHYSIONET_USERNAME", "PHYSIONET_PASSWORD")}

ACCESS_HELP = (
    "this file needs credentialed access: create a PhysioNet account, complete the required "
    "training and sign the data use agreement (https://physionet.org/content/mimiciii/), then set "
    "PHYSIONET_USERNAME and PHYSIONET_PASSWORD or add 'machine physionet.org login USER password PASS' "
    "to ~/.netrc; or point the workflow at your local NOTEEVENTS.csv.gz"
)


def _netrc_path() -> Path:
    return Path(os.environ.get("NETRC") or Path.home() / ".netrc")


def lookup(url: str) -> tuple[str, str] | None:
    """(user, password) for the URL's host, or None. Environment variables win over netrc."""
    host = urlsplit(url).hostname or ""
    for suffix, (user_var, pass_var) in ENV_VARS.items():
        if host == suffix or host.endswith("." + suffix):
            user, password = os.environ.get(user_var), os.environ.get(pass_var)
            if user and password:
                return user, password
    path = _netrc_path()
    if path.is_file():
        try:
            entry = netrc.netrc(str(path)).authenticators(host)
        except (netrc.NetrcParseError, OSError):
            return None
        if entry and entry[0] and entry[2]:
            return entry[0], entry[2]
    return None
