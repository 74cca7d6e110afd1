"""A Pulsar cluster definition's ``client`` settings as :class:`pulsar.Client`'s arguments.

The settings are pulsar-client's own keyword arguments — ``operation_timeout_seconds``,
``tls_trust_certs_file_path``, ``tls_allow_insecure_connection``, ``tls_validate_hostname``,
``tls_certificate_file_path``, ``tls_private_key_file_path``, ... (TLS itself comes from a
``pulsar+ssl://`` URL) — each value written as text (``hotstandby clusters add --set``) made
into the type pulsar-client wants (``true``/``false``, a whole number). Two more say how
clients of the cluster authenticate:

* ``auth_plugin``: a short name of the table below, or what
  ``pulsar.Authentication(plugin, params)`` loads — a built-in's Java class name
  (``org.apache.pulsar.client.impl.auth.AuthenticationToken``) or a plugin library's path;
* ``auth_params``: its parameters, a secret reference (``${env:NAME}`` or ``${file:PATH}``,
  :mod:`hotstandby.secret_refs`) resolved in the client's process each time a client is made.

=======  ================================================  =========================================
plugin   pulsar-client's class                             ``auth_params``
=======  ================================================  =========================================
token    ``AuthenticationToken(params)``                   the token (a ``token:`` prefix is dropped)
tls      ``AuthenticationTLS(cert, key)``                  none: the ``tls_certificate_file_path``
                                                           and ``tls_private_key_file_path`` settings
tls      ``Authentication("tls", params)``                 ``tlsCertFile:PATH,tlsKeyFile:PATH``
basic    ``AuthenticationBasic(auth_params_string=...)``   JSON ``{"username": ..., "password": ...}``
oauth2   ``AuthenticationOauth2(params)``                  JSON ``{"issuer_url": ..., "private_key": ...}``
athenz   ``AuthenticationAthenz(params)``                  JSON
=======  ================================================  =========================================

Precedence: a cluster whose definition names an ``auth_plugin`` is always reached with it,
also when the application passes ``authentication=`` (credentials belong to a cluster; the
application's keyword cannot tell the route's clusters apart); the application's
``authentication=`` serves the clusters whose definitions have none. Every other keyword
argument of the application replaces the definition's setting of that name.

A resolved secret is never in an error's text, a log event or a ``repr``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulsar

from hotstandby.adapter import flag
from hotstandby.configcenter.documents import ClusterSpec, Scalar
from hotstandby.errors import ConfigError, ValidationError
from hotstandby.logs import get_logger

__all__ = ["AUTH_PARAMS", "AUTH_PLUGIN", "PulsarAuth", "auth_for", "client_kwargs", "definition_kwargs"]

log = get_logger("hotstandby.pulsar.client")

AUTH_PLUGIN = "auth_plugin"
AUTH_PARAMS = "auth_params"

# Short name -> pulsar-client's class, taking ``auth_params`` as its one argument.
_BY_PARAMS = {
    "token": "AuthenticationToken",
    "basic": "AuthenticationBasic",
    "oauth2": "AuthenticationOauth2",
    "athenz": "AuthenticationAthenz",
}
_SHORT = ("token", "tls", "basic", "oauth2", "athenz")
_TLS_FILES = ("tls_certificate_file_path", "tls_private_key_file_path")
# Keyword arguments that take objects, which a JSON document cannot hold.
_OBJECTS = {"authentication": "use auth_plugin and auth_params", "logger": "pass it to the client"}


@dataclass(frozen=True, slots=True)
class PulsarAuth:
    """How clients of one cluster authenticate: pulsar-client's class ``factory`` (named by the
    definition's ``plugin``) and its arguments, secrets resolved — left out of the ``repr``."""

    cluster: str
    plugin: str
    factory: str
    args: tuple[str, ...] = field(repr=False)

    def build(self) -> pulsar.Authentication:
        """The ``authentication`` argument of :class:`pulsar.Client`.

        Raises ConfigError naming the cluster and the plugin (never the parameters) when
        pulsar-client refuses the parameters or cannot load the plugin."""
        try:
            if self.factory == "AuthenticationBasic":
                made: pulsar.Authentication = pulsar.AuthenticationBasic(auth_params_string=self.args[0])
            else:
                made = getattr(pulsar, self.factory)(*self.args)
        except (ValueError, TypeError, RuntimeError, pulsar.PulsarException) as exc:
            # Not chained: pulsar-client's text may quote the parameters.
            raise ConfigError(
                f"cluster {self.cluster!r}: auth_params are not what auth_plugin {self.plugin!r} takes "
                f"({type(exc).__name__})"
            ) from None
        if getattr(made, "auth", None) is None:  # what pulsar.Authentication makes of a plugin it cannot load
            raise ConfigError(
                f"cluster {self.cluster!r}: unknown auth_plugin {self.plugin!r}: pulsar-client cannot load it "
                f"(short names: {', '.join(_SHORT)}; or a built-in's Java class name, or a plugin library's path)"
            )
        return made


def auth_for(cluster: str, settings: Mapping[str, Scalar]) -> PulsarAuth | None:
    """The authentication the (resolved) ``client`` settings of ``cluster`` name; None without
    ``auth_plugin``. Raises ConfigError for ``auth_params`` without a plugin, a plugin that
    needs parameters and has none, or a value that is not text."""
    plugin, params = settings.get(AUTH_PLUGIN), settings.get(AUTH_PARAMS)
    if plugin is None:
        if params is not None:
            raise ConfigError(f"cluster {cluster!r}: auth_params without auth_plugin")
        return None
    if not isinstance(plugin, str) or not plugin.strip():
        raise ConfigError(f"cluster {cluster!r}: auth_plugin must be a name or a path, got a {type(plugin).__name__}")
    if params is not None and not isinstance(params, str):
        raise ConfigError(f"cluster {cluster!r}: auth_params must be text, got a {type(params).__name__}")
    plugin = plugin.strip()
    short = plugin.lower()
    if short == "tls" and params is None:
        paths = [settings.get(name) for name in _TLS_FILES]
        if not all(isinstance(p, str) and p for p in paths):
            raise ConfigError(
                f"cluster {cluster!r}: auth_plugin tls needs auth_params or both {' and '.join(_TLS_FILES)}"
            )
        return PulsarAuth(cluster, plugin, "AuthenticationTLS", tuple(str(p) for p in paths))
    if params is None:
        raise ConfigError(f"cluster {cluster!r}: auth_plugin {plugin!r} needs auth_params")
    if short == "token":
        params = params.removeprefix("token:")  # pulsar's client.conf form, authParams=token:...
    if short in _BY_PARAMS:
        return PulsarAuth(cluster, plugin, _BY_PARAMS[short], (params,))
    return PulsarAuth(cluster, plugin, "Authentication", (plugin, params))


@functools.cache
def _parameters() -> Mapping[str, inspect.Parameter]:
    """pulsar.Client's keyword arguments after the service URL (of the installed version)."""
    params = dict(inspect.signature(pulsar.Client.__init__).parameters)
    for name in ("self", "service_url"):
        params.pop(name, None)
    return params


def _typed(cluster: str, name: str, value: Scalar) -> Any:
    """A setting as the type of pulsar.Client's default for it (text from the CLI)."""
    param = _parameters().get(name)
    if param is None or name in _OBJECTS:
        hint = _OBJECTS.get(name, "not an argument of pulsar.Client")
        raise ConfigError(f"cluster {cluster!r}: client setting {name!r}: {hint}")
    default = param.default
    if isinstance(default, bool):
        return value if isinstance(value, bool) else flag(value)
    if isinstance(default, int) and not isinstance(value, bool):
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"cluster {cluster!r}: client setting {name!r} must be a whole number") from None
    return value


def definition_kwargs(spec: ClusterSpec) -> tuple[dict[str, Any], PulsarAuth | None]:
    """The definition's ``client`` settings, secrets resolved, as pulsar.Client's keyword
    arguments, and the authentication they name (not built yet)."""
    try:
        settings = spec.client_config("admin")
    except ValidationError as exc:  # a reference that names nothing: the setting and the reference
        raise ValidationError(f"clusters/{spec.name}", f"{exc.key}: {exc.problem}") from None
    auth = auth_for(spec.name, settings)
    kwargs = {name: _typed(spec.name, name, value) for name, value in settings.items()
              if name not in (AUTH_PLUGIN, AUTH_PARAMS)}  # fmt: skip
    return kwargs, auth


def client_kwargs(spec: ClusterSpec, keywords: Mapping[str, Any]) -> dict[str, Any]:
    """Everything but the URL that ``pulsar.Client(spec.url, ...)`` takes for a client of
    ``spec``'s cluster: its definition's settings, replaced by the application's ``keywords``,
    and the definition's authentication, which wins over the application's (module doc)."""
    settings, auth = definition_kwargs(spec)
    kwargs = {**settings, **keywords}
    if auth is not None:
        if keywords.get("authentication") is not None:
            log.info("client.auth_from_definition", cluster=spec.name, plugin=auth.plugin)
        kwargs["authentication"] = auth.build()
    return kwargs
