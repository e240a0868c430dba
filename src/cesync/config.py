"""The model of ``cesync.yaml``: project settings and environments."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["EMBEDDED", "ENV_NAME", "Config", "Defaults", "Environment", "Safety"]

EMBEDDED = "embedded"
ENV_NAME = re.compile(r"^[a-z]([a-z0-9-]*[a-z0-9])?$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Safety(_Strict):
    """octoDNS-style guard against plans that touch too much at once."""

    maxChangeFraction: float = Field(
        0.3, ge=0, le=1, description="Refuse to apply when deletes+updates exceed this share of the managed resources."
    )
    minResources: int = Field(10, ge=0, description="The fraction is checked only when at least this many resources are managed.")


class Defaults(_Strict):
    """Values every environment inherits unless it sets its own."""

    project: str | None = None
    location: str | None = None
    endpoint: str | None = None
    vars: dict[str, str] = Field(default_factory=dict)


class Environment(_Strict):
    project: str | None = Field(None, description="Google Cloud project id.")
    location: str | None = Field(None, description="CES location, e.g. us, eu or global.")
    app: str = Field(description="The CES app id (the last part of projects/*/locations/*/apps/*).")
    endpoint: str | None = Field(
        None,
        description="'embedded' (the in-process emulator, state in .cesync/<env>.json), "
        "an http(s) URL, or absent for Google's endpoint for the location.",
    )
    vars: dict[str, str] = Field(default_factory=dict, description="Values for ${NAME} in tool files.")
    urls: dict[str, str] = Field(
        default_factory=dict, description="Per tool or toolset id: the server URL that replaces $env_var."
    )
    prune: bool | None = Field(None, description="Delete remote resources that the repo does not define.")
    impersonateServiceAccount: str | None = None
    quotaProject: str | None = None

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value is not None and value != EMBEDDED and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("endpoint must be 'embedded' or an http(s) URL such as http://127.0.0.1:8765")
        return value


class Config(_Strict):
    version: Literal[1] = 1
    environments: dict[str, Environment] = Field(min_length=1)
    defaults: Defaults = Field(default_factory=Defaults)
    prune: bool = Field(False, description="Delete remote resources that the repo does not define.")
    safety: Safety = Field(default_factory=Safety)

    @field_validator("environments")
    @classmethod
    def _names(cls, value: dict[str, Environment]) -> dict[str, Environment]:
        for name in value:
            if not ENV_NAME.match(name):
                raise ValueError(f"environment name {name!r}: use lowercase letters, digits and '-'")
        return value
