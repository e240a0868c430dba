"""The emulator reads the API's methods from cesync's API description (emulator/methods.py): the
same methods, verbs and query parameters as the discovery documents Google's client ships."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import googleapiclient
import pytest

from cesync.emulator.methods import methods, query_parameters

DOCUMENTS = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents"


@pytest.mark.parametrize("version", ["v1", "v1beta"])
def test_the_description_has_the_documents_methods(version: str) -> None:
    document = json.loads((DOCUMENTS / f"ces.{version}.json").read_text())

    def walk(resources: dict[str, Any]) -> list[dict[str, Any]]:
        return [m for r in resources.values() for m in [*r.get("methods", {}).values(), *walk(r.get("resources", {}))]]

    for method in walk(document["resources"]):
        described = methods(version)[method["id"]]
        assert (described["httpMethod"], described["path"]) == (method["httpMethod"], method["flatPath"])
        query = {name for name, p in method.get("parameters", {}).items() if p["location"] == "query"}
        assert query_parameters(version, method["id"]) == query, method["id"]


def test_a_method_the_description_lacks_has_no_parameters() -> None:
    assert query_parameters("v1", "ces.projects.locations.apps.nothing.list") == frozenset()
    assert "ces.projects.locations.apps.evaluations.list" not in methods("v1")  # EvaluationService is v1beta's
