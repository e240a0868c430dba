"""The IAM permission each CES REST method needs (pure): what a PERMISSION_DENIED hint names.

Source: Google's CES REST reference, each method page's "IAM Permissions" section
(docs.cloud.google.com/customer-engagement-ai/conversational-agents/ps/reference/rest/v1/...).
Read there: ``ces.tools.create`` and ``ces.tools.get`` (tools.create, tools.get),
``ces.agents.update`` (agents.patch), ``ces.appVersions.create`` (versions.create),
``ces.appVersions.restore`` (versions.restore), ``ces.apps.export`` (apps.exportApp),
``ces.operations.get`` (operations.get); ``ces.tools.execute`` (apps.executeTool) is named
in the seed pages. The permission is ``ces.<resource>.<verb>``, the resource in camelCase
plural (``appVersions`` for the ``versions`` collection), the verb the standard method's
(``list``, ``get``, ``create``, ``update`` for patch, ``delete``); the pages read agree with
that pattern for every kind, and it is assumed for the methods whose pages we did not read.
The pages we have are silent on ``apps:importApp``, ``apps:retrieveToolSchema`` and
``toolsets:retrieveTools``: no permission is named for them.
"""

from __future__ import annotations

import re

from .kinds import KINDS

__all__ = ["permission"]

# Collection segment of a resource name -> the resource word of its permissions: every kind's
# collection is its own word (``ces.tools.create``); these are the collections of no kind.
_OTHER_RESOURCES = {"versions": "appVersions", "changelogs": "changelogs", "operations": "operations"}


def _resource_word(collection: str) -> str | None:
    if collection in _OTHER_RESOURCES:
        return _OTHER_RESOURCES[collection]
    return collection if any(k.collection == collection for k in KINDS.values()) else None


_STANDARD = {("GET", False): "list", ("POST", False): "create", ("GET", True): "get", ("PATCH", True): "update"}
_STANDARD[("DELETE", True)] = "delete"
# custom methods (":verb" on a resource or collection) -> the permission, from the reference
_CUSTOM = {
    "exportApp": "ces.apps.export",
    "executeTool": "ces.tools.execute",
    "restore": "ces.appVersions.restore",
}
_TOOLSET_TOOLS = re.compile(r"/toolsets/[^/]+/tools(/|\Z)")
_LOCATION = re.compile(r"^projects/[^/]+/locations/[^/]+/(.*)\Z")


def permission(method: str, path: str) -> str:
    """The permission a call needs (``ces.appVersions.create``), or "" where the sources name none.

    path: the resource path after the API version (``projects/p/locations/l/apps/a/versions``).
    """
    found = _LOCATION.match(path.split("?", 1)[0].strip("/"))
    if found is None:
        return ""
    rest, _, custom = found.group(1).partition(":")
    if custom:
        return _CUSTOM.get(custom, "")
    parts = rest.split("/")
    # collection/id pairs: an even count names one resource, an odd count a collection
    collection = parts[-1] if len(parts) % 2 else parts[-2]
    if _TOOLSET_TOOLS.search(rest):
        return ""  # a toolset's own tools: no page we have names their permission
    resource = _resource_word(collection)
    verb = _STANDARD.get((method.upper(), len(parts) % 2 == 0))
    return f"ces.{resource}.{verb}" if resource and verb else ""
