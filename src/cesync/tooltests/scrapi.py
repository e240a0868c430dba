"""What a cxas-scrapi tool test sends, as cxas-scrapi 1.10 sends it (pure).

``ToolEvals.run_tool_tests`` and ``Tools.execute_tool`` decide the request:

- a variable given as a name only (``variables: [tier]``, or ``tier: null``) takes the
  app's value: the declaration's ``schema.default``, or ``{}`` when that is missing
  or falsy (scrapi's ``default or value or {}``);
- when a test gives no variables (or only names the app lacks), every declared
  variable is sent with that value;
- a ``context`` is sent instead of variables; its ``state``, if it has one, is
  replaced by those variables (``context`` without ``state`` sends no variables);
- ``mockConfig`` is no field of scrapi's test case: it is never sent (the loader
  refuses it, see schema.py).
"""

from __future__ import annotations

from typing import Any

__all__ = ["app_variables", "scrapi_request"]


def app_variables(app: dict[str, Any]) -> dict[str, Any]:
    """The app's variables as scrapi reads them from GetApp."""
    out: dict[str, Any] = {}
    for declaration in app.get("variableDeclarations") or []:
        if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
            schema: dict[str, Any] = declaration["schema"] if isinstance(declaration.get("schema"), dict) else {}
            out[declaration["name"]] = schema.get("default") or declaration.get("value") or {}
    return out


def scrapi_request(
    variables: dict[str, Any] | None, context: dict[str, Any] | None, app: dict[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(variables, context) of the executeTool request scrapi makes for a test."""
    final: dict[str, Any] = {}
    for name, value in (variables or {}).items():
        if value is not None:
            final[name] = value
        elif name in app:
            final[name] = app[name]
    if context and "state" in context:
        final = context["state"]
    if not final:
        final = dict(app)
    if context:
        return None, {**context, "state": final} if "state" in context else dict(context)
    return final, None
