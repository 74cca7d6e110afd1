"""Secrets in cluster definitions: by reference only, resolved in the client process.

A cluster definition in etcd is read by every client and every operator, so a secret must not
sit there. A secret-bearing setting holds a reference instead, ``${env:NAME}`` (an environment
variable of the client process) or ``${file:PATH}`` (a file's content, without its line end),
resolved only when a client is built (:func:`resolve_refs`). Which settings bear secrets
(:func:`is_secret_setting`): a name with a part ``password``, ``secret``, ``token``, ``key``,
``pem``, ``credentials``, ``oauthbearer`` or ``auth_params``, or ``sasl.jaas``, unless its last
part is ``location``, ``path`` or ``file`` (it names a file: ``ssl.key.location``,
``tls_private_key_file_path``); and any value that is a URL with ``user:password@``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from hotstandby.errors import ValidationError

__all__ = [
    "REDACTED",
    "has_userinfo",
    "is_reference",
    "is_secret_setting",
    "literal_secrets",
    "redact_value",
    "resolve_refs",
]

REDACTED = "***"

_REF = re.compile(r"\$\{(env|file):([^}]+)\}")
_WHOLE_REF = re.compile(r"^\$\{(?:env:[A-Za-z_][A-Za-z0-9_]*|file:[^}]+)\}$")
_PARTS = frozenset({"password", "passwd", "secret", "token", "key", "pem", "credentials", "credential",
                    "oauthbearer", "auth_params", "authparams", "apikey"})  # fmt: skip
_FILE_PARTS = frozenset({"location", "path", "file"})
_SPLIT = re.compile(r"[._\-\s]+")
_URL_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^/@:\s]+):(?P<password>[^/@\s]+)@")


def is_secret_setting(name: str) -> bool:
    """Whether a setting of this name bears a secret (see the module docs)."""
    lowered = name.lower()
    if "sasl.jaas" in lowered or "auth_params" in lowered or "api_key" in lowered:
        return True
    parts = _SPLIT.split(lowered)
    if parts[-1] in _FILE_PARTS:
        return False  # it names the file that holds the key (ssl.key.location), not the key
    return any(part in _PARTS for part in parts)


def has_userinfo(value: object) -> bool:
    """A URL with ``user:password@`` (as Pulsar and HTTP URLs allow)."""
    return isinstance(value, str) and _URL_USERINFO.match(value.strip()) is not None


def is_reference(value: object) -> bool:
    """The whole value is one ``${env:NAME}`` or ``${file:PATH}``."""
    return isinstance(value, str) and _WHOLE_REF.match(value.strip()) is not None


def literal_secrets(settings: Mapping[str, object]) -> list[str]:
    """The names of settings that hold a secret literally (not a reference), sorted."""
    return sorted(name for name, value in settings.items()
                  if (is_secret_setting(name) and not is_reference(value)) or has_userinfo(value))  # fmt: skip


def redact_value(name: str, value: object) -> object:
    """``value`` as output may show it: a literal secret as ``***`` (a reference stays: it names
    where the secret is, not what it is), a URL's password as ``***``."""
    if isinstance(value, str) and has_userinfo(value):
        return _URL_USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", value.strip())
    if is_secret_setting(name) and not is_reference(value):
        return REDACTED
    return value


def resolve_refs(settings: Mapping[str, object], environ: Mapping[str, str] | None = None) -> dict[str, object]:
    """Each ``${env:NAME}`` and ``${file:PATH}`` replaced by what it names; a variable that is not
    set or a file that cannot be read is a :class:`ValidationError` naming the setting and the
    reference, never the secret."""
    env = os.environ if environ is None else environ
    out: dict[str, object] = {}
    for name, value in settings.items():
        if not isinstance(value, str) or "${" not in value:
            out[name] = value
            continue

        def resolve(match: re.Match[str], name: str = name) -> str:
            kind, target = match.group(1), match.group(2)
            if kind == "env":
                if target not in env:
                    raise ValidationError(name, f"environment variable {target} is not set")
                return env[target]
            try:
                return Path(target).read_text().rstrip("\r\n")
            except OSError as exc:
                raise ValidationError(name, f"cannot read {target}: {exc.strerror}") from None

        out[name] = _REF.sub(resolve, value)
    return out
