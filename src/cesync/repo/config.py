"""The model of ``cesync.yaml``: project settings and environments."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator

__all__ = [
    "EMBEDDED",
    "EMULATOR",
    "ENV_NAME",
    "Config",
    "Defaults",
    "Environment",
    "QuotaSettings",
    "Safety",
    "check_segment",
    "normalize_endpoint",
]

EMBEDDED = "embedded"
EMULATOR = "emulator"  # the emulator CES_EMULATOR_HOST names: the one way that variable reaches an environment of Google's
ENV_NAME = re.compile(r"^[a-z]([a-z0-9-]*[a-z0-9])?\Z")  # \Z, not $: no trailing newline (names become file names)
# One resource-name segment: nothing that could add a path segment, a query, a custom
# method (':'), an escape ('%') or a '..' to the URL it is put in.
SEGMENT = re.compile(r"[A-Za-z0-9_-]{1,128}(?:\.[A-Za-z0-9_-]{1,128}){0,8}")
# Domain-scoped project ids (example.com:my-project) are the one place a ':' is allowed.
PROJECT = re.compile(r"(?:[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){1,8}:)?[A-Za-z0-9_-]{1,128}")
HOSTNAME = re.compile(r"(?:[A-Za-z0-9-]{1,63}\.)*[A-Za-z0-9-]{1,63}\.?")  # used with fullmatch


def check_segment(value: str, what: str) -> str:
    """``value`` if it is a plain resource-name segment for ``what`` (project, location, app, ...)."""
    pattern = PROJECT if what == "project" else SEGMENT
    if not isinstance(value, str) or not pattern.fullmatch(value):  # not match + '$': that lets a trailing newline in
        raise ValueError(
            f"invalid {what} id {value!r}: use letters, digits, '-', '_' and single dots"
            + (" (or domain:project)" if what == "project" else "")
            + "; '/', '?', '#', '%', ':', '..' and spaces would change the API URL"
        )
    return value


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def normalize_endpoint(value: str) -> str:
    """The one check of an endpoint, for ``endpoint:`` in cesync.yaml and ``--endpoint`` alike.

    Returns 'embedded', 'emulator' (whatever CES_EMULATOR_HOST names) or ``scheme://host[:port]``.
    The emulator's printed ``host:port`` is read as ``http://host:port`` when the host is loopback, and refused with a hint
    otherwise (a bare host must never be mistaken for a Google endpoint that gets a token).
    """
    if value in (EMBEDDED, EMULATOR):
        return value
    if not isinstance(value, str) or not value or any(c.isspace() for c in value):
        raise ValueError(
            f"endpoint {value!r}: must be 'embedded', 'emulator' or a URL such as http://127.0.0.1:8765, without spaces"
        )
    if "://" not in value:
        bare = urlsplit(f"//{value}")
        try:
            port = bare.port
        except ValueError:
            port = None
        if bare.hostname and port and bare.path == "" and _is_loopback(bare.hostname) and "@" not in value:
            return f"http://{value}"
        raise ValueError(
            f"endpoint {value!r} has no scheme: write http://{value} for an emulator (loopback host:port is read that way), "
            "or https://HOST for a CES API endpoint"
        )
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"endpoint {value!r}: the scheme must be http (emulator) or https (CES API)")
    if "@" in parts.netloc:
        raise ValueError(f"endpoint {value!r}: user info ('user@') is not allowed in an endpoint")
    try:
        parts.port  # noqa: B018  # raises on a malformed port
    except ValueError:
        raise ValueError(f"endpoint {value!r}: the port is not a number from 0 to 65535") from None
    host = parts.hostname or ""
    if not host or not (HOSTNAME.fullmatch(host) or _is_ip(host)):
        raise ValueError(f"endpoint {value!r}: no valid host name")
    if parts.path not in ("", "/") or parts.query or parts.fragment or value.endswith(("?", "#")):
        raise ValueError(f"endpoint {value!r}: give scheme://host[:port] only, without a path, query or fragment")
    return f"{parts.scheme}://{parts.netloc}"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SENSITIVE_HELP = (
    "Variables whose values are secret: never printed, logged or saved in a plan (fields show '(sensitive)'). "
    "Added to the defaults' list."
)

VarName = Annotated[str, Field(pattern=VAR_NAME.pattern)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _var_text(value: object) -> object:
    """A variable's YAML scalar as the text ${NAME} puts in place (true -> 'true', 30 -> '30'): where the
    placeholder is a whole value, it takes the field's type again (templating)."""
    if isinstance(value, dict):
        return {k: _scalar_text(v) for k, v in value.items()}
    return value


def _scalar_text(value: object) -> object:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, (int, float)) else value


class Safety(_Strict):
    """octoDNS-style guard against plans that touch too much at once."""

    maxChangeFraction: float = Field(
        0.3,
        ge=0,
        le=1,
        description="Refuse to apply when deletes (renames included: what can lose data) exceed this share of the "
        "managed resources.",
    )
    maxUpdateFraction: float = Field(
        0.8, ge=0, le=1, description="Refuse to apply when updates in place exceed this share of the managed resources."
    )
    minResources: int = Field(10, ge=0, description="The fraction is checked only when at least this many resources are managed.")


class QuotaSettings(_Strict):
    """CES's request quotas of the environment's project (requests a minute), which cesync paces to.

    Absent, Google endpoints get CES's documented defaults (600 writes and 600 reads a minute)
    and emulators none; 0 sends as fast as the server admits, slowing down on its first refusal."""

    writesPerMinute: int | None = Field(None, ge=0, description="ces.googleapis.com/write_requests a minute.")
    readsPerMinute: int | None = Field(None, ge=0, description="ces.googleapis.com/read_requests a minute.")


class Records(_Strict):
    """The applied records: app versions cesync makes after each apply (see core/record.py)."""

    keep: int = Field(
        10, ge=1, le=1000, description="Keep this many applied records (app versions) per environment; older ones are deleted."
    )


class Promote(_Strict):
    """What cesync promote may lay out (see docs/ownership.md)."""

    reviewedBranch: str = Field(
        "main",
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9._/-]+$",
        description="Promote only commits reachable from this branch (the one changes are reviewed into).",
    )


class Api(_Strict):
    """Which description of the CES API cesync reads the repo with (docs/api-revision.md)."""

    discovery: dict[Literal["v1", "v1beta"], str] = Field(
        default_factory=dict,
        description="Google's discovery documents for CES newer than the revision cesync ships (ces.v1.json from "
        "https://ces.googleapis.com/$discovery/rest?version=v1, and v1beta's), by API version: files of the repo.",
    )
    fetch: bool = Field(
        True,
        description="When a file uses a field or enum value cesync's description lacks, fetch the live discovery "
        "document from ces.googleapis.com (cached under .cesync/discovery/) before refusing it.",
    )

    @field_validator("discovery")
    @classmethod
    def _inside(cls, value: dict[str, str]) -> dict[str, str]:
        for version, path in value.items():
            parts = path.replace("\\", "/").split("/")
            if not path or path.startswith("/") or ".." in parts or ":" in path:
                raise ValueError(f"discovery.{version}: {path!r}: name a file inside the repo, relative to cesync.yaml")
        return value


IGNORE_HELP = (
    "Fields left to the console, per kind (tool, agent, ...): dotted field paths (instruction, "
    "modelSettings.temperature) that plan never changes and pull never writes back. Added to the defaults' lists."
)


class Defaults(_Strict):
    """Values every environment inherits unless it sets its own."""

    project: str | None = None
    location: str | None = None
    endpoint: str | None = None
    vars: Annotated[dict[str, str], BeforeValidator(_var_text)] = Field(default_factory=dict)
    sensitive: list[VarName] = Field(default_factory=list, description=SENSITIVE_HELP)
    quota: QuotaSettings | None = None
    ignoreChanges: dict[str, list[str]] = Field(default_factory=dict, description=IGNORE_HELP)

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        return None if value is None else normalize_endpoint(value)

    @field_validator("project", "location")
    @classmethod
    def _segment(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else check_segment(value, str(info.field_name))


class Environment(_Strict):
    project: str | None = Field(None, description="Google Cloud project id.")
    location: str | None = Field(None, description="CES location, e.g. us, eu or global.")
    app: str = Field(description="The CES app id (the last part of projects/*/locations/*/apps/*).")
    endpoint: str | None = Field(
        None,
        description="'embedded' (the in-process emulator, state in .cesync/<env>.sqlite), "
        "'emulator' (the one CES_EMULATOR_HOST names), an http(s) URL, or absent for Google's endpoint for the location "
        "(CES_EMULATOR_HOST never redirects that).",
    )
    vars: Annotated[dict[str, str], BeforeValidator(_var_text)] = Field(
        default_factory=dict,
        description="Values for ${NAME} in resource files (text, true/false or numbers: a placeholder that is a "
        "whole value takes its field's type).",
    )
    sensitive: list[VarName] = Field(default_factory=list, description=SENSITIVE_HELP)
    ignoreChanges: dict[str, list[str]] = Field(default_factory=dict, description=IGNORE_HELP)
    urls: dict[str, str] = Field(
        default_factory=dict,
        description="Per tool or toolset id: the server URL that replaces $env_var (${NAME} in it takes a variable).",
    )
    prune: bool | None = Field(None, description="Delete remote resources that the repo does not define.")
    skip: list[str] = Field(
        default_factory=list,
        description="Resources of the repo this environment does not have, as COLLECTION/ID (tools/debug-echo, "
        "agents/beta, ...): left out of its plan, and unmanaged if the app has them.",
    )
    impersonateServiceAccount: str | None = None
    quotaProject: str | None = None
    quota: QuotaSettings | None = Field(
        None,
        description="Requests a minute the project's CES quota allows (writesPerMinute, readsPerMinute), shared by "
        "everyone in the project; absent: CES's defaults (600 each) on Google, none on an emulator.",
    )

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        return None if value is None else normalize_endpoint(value)

    @field_validator("project", "location", "app")
    @classmethod
    def _segment(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else check_segment(value, str(info.field_name))


class Config(_Strict):
    version: Literal[1] = 1
    defaults: Defaults = Field(default_factory=Defaults)  # before environments: the order fmt writes, read top down
    environments: dict[str, Environment] = Field(min_length=1)
    prune: bool = Field(False, description="Delete remote resources that the repo does not define.")
    safety: Safety = Field(default_factory=Safety)
    records: Records = Field(default_factory=Records)
    owner: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9-]{0,39}$",
        description="This repo's owner namespace, when several repos manage one app: its records carry it, and "
        "what another owner's records own is never pruned, adopted or created by this repo.",
    )
    promote: Promote = Field(default_factory=Promote)
    api: Api = Field(default_factory=Api)
    policies: str | None = Field(
        None,
        description="A folder of the repo holding policy files (CEL rules run by validate and plan; a deny stops apply).",
    )

    @field_validator("policies")
    @classmethod
    def _policies(cls, value: str | None) -> str | None:
        parts = (value or "").replace("\\", "/").split("/")
        if value is not None and (not value or value.startswith("/") or ".." in parts or ":" in value):
            raise ValueError(f"policies: {value!r}: name a folder inside the repo, relative to cesync.yaml (e.g. policies)")
        return value

    @field_validator("environments")
    @classmethod
    def _names(cls, value: dict[str, Environment]) -> dict[str, Environment]:
        for name in value:
            if not ENV_NAME.match(name):
                raise ValueError(f"environment name {name!r}: use lowercase letters, digits and '-'")
        return value
