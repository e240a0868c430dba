"""Documents embedded in resource bodies: OpenAPI text and Python source (pure).

Parsed or scanned once per content (cached): one plan meets the same schema or code in the
lint checks, for every environment and on both sides of the diff.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Any, NamedTuple

from . import parsecache
from .yamlfile import load_data

__all__ = [
    "ENV_VAR",
    "Parsed",
    "adopt",
    "parse_document",
    "python_functions",
    "record",
    "recorded",
    "substitute_url",
    "unreadable",
    "url_back",
]


def parse_document(text: str) -> Any:
    """Parse OpenAPI text (JSON or YAML) into data under the limits of the repo's files
    (yamlfile.load_data); raises Unreadable (a ValueError) saying what is wrong.

    Cached by content: one plan meets the same schema in the render check and on both
    sides of the diff. The result is shared, so callers must not modify it.
    """
    found = _SUBSTITUTED.get(text, _NOT_DERIVED)
    if found is _NOT_DERIVED:
        return _document(text)
    return _derived(text, found) if isinstance(found, _Recipe) else found


class _Recipe(NamedTuple):
    """How substitute_url made a text: its data is derived from the source's when first asked for."""

    source: str
    placeholder: str
    url: str


# The documents made by substitute_url, by their text: the recipe until its data is asked for
# (validate never asks: it checks the unsubstituted text), then the data derived from the
# unsubstituted one's; both sides of the diff parse the substituted text.
_SUBSTITUTED: dict[str, Any] = {}
_NOT_DERIVED = object()

# A URL that reads the same substituted into a document's text as into its parsed strings:
# a scheme (so never a number, boolean or null once substituted), no quote, escape, space,
# comment, flow or indicator character, and no ':' at the end (which could make a key).
_PLAIN_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9._~/?&=%+@:-]*[A-Za-z0-9._~/?&=%+@-]")


# CES's placeholder for a tool's server URL in its OpenAPI schema (OpenApiTool.url: "If the schema
# contains the $env_var placeholder, it will replace the placeholder in the schema").
ENV_VAR = "$env_var"


def url_back(text: str, url: str) -> str:
    """text with url put back as the $env_var placeholder (export, pull): substitute_url undone."""
    return text.replace(url, ENV_VAR) if url and url in text else text


def substitute_url(text: str, placeholder: str, url: str) -> str:
    """text with placeholder replaced by url; its data is derived without parsing it again."""
    out = text.replace(placeholder, url)
    if out not in _SUBSTITUTED and _PLAIN_URL.fullmatch(url):
        _SUBSTITUTED[out] = recipe = _Recipe(text, placeholder, url)
        if _log is not None:
            _log.substituted.append((out, recipe))
    return out


def _derived(text: str, recipe: _Recipe) -> Any:
    """text's data from its recipe's source, kept in place of the recipe; a source that cannot be
    read, or holds the placeholder in a key, leaves text to be parsed itself."""
    try:
        data = _substituted(_document(recipe.source), recipe.placeholder, recipe.url)
    except (ValueError, _KeyPlaceholder):
        _SUBSTITUTED.pop(text, None)
        return _document(text)
    _SUBSTITUTED[text] = data
    return data


class _KeyPlaceholder(Exception):
    """The placeholder in a mapping key: such a document is parsed from its text (keys could collide)."""


def _substituted(data: Any, placeholder: str, url: str) -> Any:
    """parsed (shared, cached) data with placeholder replaced in every string.

    Copy on write: a mapping or list none of whose strings holds the placeholder is the
    parsed one itself, so the two documents share it (less memory, and the diff sees
    one object on both sides). Strings are handled in the loops: most values are strings,
    and a call for each was most of the walk.
    """
    if isinstance(data, str):
        return data.replace(placeholder, url) if placeholder in data else data
    if isinstance(data, dict):
        copy: dict[Any, Any] | None = None
        for k, v in data.items():
            if isinstance(k, str) and placeholder in k:
                raise _KeyPlaceholder
            if isinstance(v, str):
                if placeholder not in v:
                    continue
                new = v.replace(placeholder, url)
            elif isinstance(v, (dict, list)):
                new = _substituted(v, placeholder, url)
                if new is v:
                    continue
            else:
                continue
            if copy is None:
                copy = dict(data)
            copy[k] = new
        return data if copy is None else copy
    if isinstance(data, list):
        items: list[Any] | None = None
        for i, v in enumerate(data):
            if isinstance(v, str):
                if placeholder not in v:
                    continue
                new = v.replace(placeholder, url)
            elif isinstance(v, (dict, list)):
                new = _substituted(v, placeholder, url)
                if new is v:
                    continue
            else:
                continue
            if items is None:
                items = list(data)
            items[i] = new
        return data if items is None else items
    return data


def _document(text: str) -> Any:
    """parse_document, uncached by substitution: what another process parsed (adopt), else parsed here."""
    found = _ADOPTED_DOCUMENTS.get(text, _NOT_DERIVED)
    return _parse_document(text) if found is _NOT_DERIVED else found


@functools.cache  # as _top_functions
def _parse_document(text: str) -> Any:
    data = load_data(text)
    if _log is not None:
        _log.documents.append((text, data))
    return data


def unreadable(body: dict[str, Any]) -> list[str]:
    """'field: why' for each document in a resource body that cannot be read: what a console user
    wrote into the app is read under the repo's limits, and one resource over them is named, not
    the end of the run."""
    found = []
    for field in _OPENAPI_FIELDS:
        spec = body.get(field)
        text = spec.get("openApiSchema") if isinstance(spec, dict) else None
        if isinstance(text, str):
            try:
                parse_document(text)
            except ValueError as exc:
                found.append(f"{field}.openApiSchema: {exc}")
    return found


def python_functions(code: str) -> list[str]:
    found = _ADOPTED_FUNCTIONS.get(code)
    return list(_top_functions(code) if found is None else found)


_OPENAPI_FIELDS = ("openApiTool", "openApiToolset")


@functools.cache  # one entry per distinct code of the repo: memory grows with resources
def _top_functions(code: str) -> tuple[str, ...]:
    names: tuple[str, ...] = _function_names(code)
    if _log is not None:
        _log.functions.append((code, names))
    return names


@functools.partial(parsecache.cached, b"p")  # kept between runs (a SyntaxError is raised again, not kept)
def _function_names(code: str) -> tuple[str, ...]:
    """Cached by content: every environment (and both sides of a diff) checks the same code.
    ValueError for code too complex for Python's parser: the code may be a server's or the app's
    (a console user's), and the parser stops on deep nesting with MemoryError or RecursionError,
    not SyntaxError, which nothing should take for the end of the run."""
    try:
        tree = ast.parse(code)
    except (MemoryError, RecursionError):
        raise ValueError("the code is too complex for Python's parser (nested too deep)") from None
    return tuple(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


class Parsed(NamedTuple):
    """What one process parsed and made (record), for another to take (adopt): each is a pure
    function's result for its text, so taking one gives what parsing there would have."""

    documents: list[tuple[str, Any]]  # (OpenAPI text, parse_document's data)
    functions: list[tuple[str, tuple[str, ...]]]  # (Python code, its top-level function names)
    substituted: list[tuple[str, Any]]  # (substitute_url's text, how it was made)


# What this process parsed since record(), or None when not recording (the usual case).
_log: Parsed | None = None
# What another process parsed and handed over (adopt), by text.
_ADOPTED_DOCUMENTS: dict[str, Any] = {}
_ADOPTED_FUNCTIONS: dict[str, tuple[str, ...]] = {}


def record() -> None:
    """Keep from now on what this process parses and substitutes (recorded()): a process forked
    to render part of a repo hands it to its parent (repo/parallel.py)."""
    global _log
    _log = Parsed([], [], [])


def recorded() -> Parsed:
    """What was parsed and substituted since record() (nothing if it was not called)."""
    return _log if _log is not None else Parsed([], [], [])


def adopt(parsed: Parsed) -> None:
    """Take what another process parsed: parse_document and python_functions give it without
    parsing the text again, and the same object each time (the diff's walk is skipped for one
    document on both sides)."""
    _ADOPTED_DOCUMENTS.update(parsed.documents)
    _ADOPTED_FUNCTIONS.update(parsed.functions)
    for text, recipe in parsed.substituted:
        _SUBSTITUTED.setdefault(text, recipe)
