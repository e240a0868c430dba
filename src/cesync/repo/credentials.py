"""Literal credentials where they do not belong: a lint over the text of every repo file.

``validate`` warns on each hit with ``file:line:col`` (``--strict`` makes warnings
fail). The raw text is scanned, not the parsed values, so a position is exact and a
``${NAME}`` reference (a variable, not a literal) never matches.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from dataclasses import astuple, dataclass, replace
from itertools import accumulate
from pathlib import Path

from ..api import behaviour as fb
from ..core import parsecache
from ..core.checks import takes_only_context_variables
from ..core.parsecache import MISSING
from ..core.yamlfile import Path_, read_text
from ..errors import Problem
from .files import resolved_below
from .loading import CONFIG_FILE, display_path
from .repo import Repo, SourceFile
from .templating import INCLUDABLE

__all__ = ["CONTEXT_ONLY", "HOME", "WARNING", "lint_credentials", "scan_text", "sensitive_literals"]

WARNING = "warning: "
HOME = (
    "keep it out of the repo: store it in Secret Manager and reference the version "
    "(apiKeySecretVersion, clientSecretVersion, ...), or pass it through a variable listed under "
    "'sensitive:' in cesync.yaml and set it from the environment (a CI secret)"
)
_TOKEN = r"[A-Za-z0-9\-._~+/]"


@dataclass(frozen=True)
class _Rule:
    what: str
    pattern: re.Pattern[str]
    group: int = 0  # the part of the match that must look random (0: no entropy test)
    # Text every match contains (a pattern of literals, same flags): a file without it skips
    # the rule, instead of running the rule on each of its lines (most of validate's lint time).
    needle: re.Pattern[str] | None = None


RULES = (
    _Rule("a private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"), needle=re.compile("PRIVATE KEY-----")),
    _Rule("a bearer token", re.compile(rf"\bBearer\s+({_TOKEN}{{16,}}=*)"), 1, re.compile("Bearer")),
    _Rule("a Google API key", re.compile(r"\bAIza[0-9A-Za-z\-_]{35}"), needle=re.compile("AIza")),
    _Rule(
        "a GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
        needle=re.compile("gh[pousr]_|github_pat_"),
    ),
    _Rule("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), needle=re.compile("AKIA|ASIA")),
    _Rule("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), needle=re.compile("xox")),
    _Rule(
        "a literal key/token value",
        re.compile(
            r"(?i)\b[a-z_\-]*(?:key|token|secret|password|passwd|pwd|credential)s?[\"']?\s*[=:]\s*[\"']?"
            rf"({_TOKEN}{{16,}}=*)"
        ),
        1,
        re.compile("(?i)key|token|secret|password|passwd|pwd|credential"),
    ),
)


def _needles(text: str) -> tuple[list[_Rule], Iterable[int] | None]:
    """The rules whose needle occurs in text, and the (1-based) numbers of the lines where one
    does, in order (None: every line, for a rule without a needle).

    A rule matches only on a line holding its needle, and a needle (literal text, no line
    break) found in the whole text lies on one line: the other lines cannot warn. One
    search of the whole text per rule finds those lines, instead of one search per line.
    """
    rules: list[_Rule] = []
    at: set[int] = set()
    lowered = text.lower() if text.isascii() else ""
    every_line = False
    for rule in RULES:
        if rule.needle is None:
            rules.append(rule)
            every_line = True
            continue
        found = _found(rule.needle, text, lowered)
        if found:
            rules.append(rule)
            at.update(found)
    if every_line or not at:
        return rules, None
    starts = list(accumulate((len(line) for line in text.splitlines(keepends=True)), initial=0))
    return rules, sorted({bisect_right(starts, i) for i in at})


def _found(needle: re.Pattern[str], text: str, lowered: str) -> list[int]:
    """Where needle occurs in text: each match of it, or for an IGNORECASE needle of words and
    ASCII text (lowered: text.lower()) each occurrence of each word in lowered, found by str.find.
    For ASCII, IGNORECASE is lower case on both sides (same length, same positions); re's search of
    an alternation tries each word at each character (most of validate's lint time, on OpenAPI
    files). Occurrences a match would have overlapped are found too: they only name lines a
    match of the rule needs anyway, and each match's start is among them."""
    words = _LOWER_NEEDLES.get(needle) if lowered else None
    if words is None:
        return [m.start() for m in needle.finditer(text)]
    found: list[int] = []
    for word in words:
        at = lowered.find(word)
        while at >= 0:
            found.append(at)
            at = lowered.find(word, at + 1)
    return found


# Only needles of lower-case words and '|' (no escapes or classes that lower() would change).
_LOWER_NEEDLES = {
    rule.needle: tuple(rule.needle.pattern.removeprefix("(?i)").split("|"))
    for rule in RULES
    if rule.needle is not None
    and rule.needle.flags & re.IGNORECASE
    and re.fullmatch(r"[a-z]+(?:\|[a-z]+)*", rule.needle.pattern.removeprefix("(?i)"))
}


def _random_looking(value: str) -> bool:
    """Long, mixed and high in entropy: a generated secret rather than a word or a placeholder."""
    if len(value) < 16 or value.startswith(("projects/", "http", "$")):
        return False
    classes = sum(bool(re.search(p, value)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return classes >= 2 and entropy >= 3.3


def scan_text(text: str, file: str) -> list[Problem]:
    """One warning per credential-looking literal in text, at its line and column."""
    found: list[Problem] = []
    rules, numbers = _needles(text)
    if not rules:
        return found
    lines = text.splitlines()
    for number in numbers or range(1, len(lines) + 1):
        line = lines[number - 1]
        taken: set[int] = set()
        for rule in rules:
            for m in rule.pattern.finditer(line):
                if rule.group and not _random_looking(m.group(rule.group)):
                    continue
                start = m.start(rule.group) if rule.group else m.start()
                if any(start <= t < m.end() for t in taken):
                    continue
                taken.add(start)
                found.append(Problem(file, number, start + 1, f"{WARNING}{rule.what} in plain text; {HOME}"))
    return found


CONTEXT_ONLY = (
    "takes only $context.variables.<name>, so neither a Secret Manager version nor a 'sensitive:' "
    "variable can go there: write the name of a context variable and give the session its value at run time"
)


def _fitting(problem: Problem, src: SourceFile) -> Problem:
    """The advice for a literal in a resource file, fitted to the field it is in: a field that
    takes only a context variable cannot hold a secret's version or a variable's value."""
    path = _path_at(src.doc.positions.values, problem.line, problem.col)
    if path is None or not takes_only_context_variables(src.kind.model, path):
        return problem
    what = problem.message.removesuffix(f"; {HOME}")
    return replace(problem, message=f"{what}; {'.'.join(map(str, path))} {CONTEXT_ONLY}")


def _path_at(values: dict[Path_, tuple[int, int]], line: int, col: int) -> Path_ | None:
    """The innermost value that starts at or before (line, col): the one a hit there is in."""
    before = [path for path, at in values.items() if at <= (line, col)]
    return max(before, key=lambda path: (values[path], len(path))) if before else None


def sensitive_literals(names: Iterable[str], vars_at: dict[str, tuple[str, int, int]]) -> list[Problem]:
    """A sensitive variable given a value in cesync.yaml itself: the value is in the repo."""
    return [
        Problem(
            file,
            line,
            col,
            f"{WARNING}sensitive variable '{name}' has its value in cesync.yaml; set it in the process "
            "environment instead (a CI secret), so the value is never in the repo",
        )
        for name in sorted(set(names))
        if name in vars_at
        for file, line, col in [vars_at[name]]
    ]


# --- the repo's files (validate's warnings; here, not in workflow, so validate stays light) ------


def lint_credentials(repo: Repo) -> list[Problem]:
    """Warnings for literal credentials in cesync.yaml, every tool and toolset file and what they include."""
    problems: list[Problem] = []
    files = [repo.root / CONFIG_FILE, *(f.path for f in repo.files)]
    for src in repo.files:
        files += _includes(src.doc.data, src.path.parent, repo.root)
    sources = {src.doc.file: src for src in repo.files}
    read = {src.path: src.doc.text for src in repo.files if src.doc.text}  # as loading read them
    scanned = _scan_files(repo.root, list(dict.fromkeys(files)), read)
    for found in scanned:
        problems += [_fitting(p, sources[p.file]) if p.file in sources else p for p in found]
    problems += input_only_literals(repo)
    cfg, doc = repo.config, repo.config_doc
    literal = {n: ("defaults", "vars", n) for n in cfg.defaults.vars}
    for env_name, env in cfg.environments.items():
        names = {*cfg.defaults.sensitive, *env.sensitive}
        where = {**literal, **{n: ("environments", env_name, "vars", n) for n in env.vars}}
        at = {n: (doc.file, *doc.positions.at(p)) for n, p in where.items() if n in names}
        problems += sensitive_literals(names, at)
    return sorted(set(problems))


def input_only_literals(repo: Repo) -> list[Problem]:
    """An INPUT_ONLY field (cesync.api.behaviour: a one-time credential, such as a WhatsApp PIN)
    written as a literal: it is in the repo. cesync masks it in every output either way."""
    sensitive = {*repo.config.defaults.sensitive, *(n for e in repo.config.environments.values() for n in e.sensitive)}
    found: list[Problem] = []
    for src in repo.files:
        data = src.doc.data
        if not isinstance(data, dict):
            continue
        for name in fb.fields(src.kind.model_name, fb.INPUT_ONLY):
            for path, text in _leaves(data.get(name), (name,)):
                if not any(ref in sensitive for ref in _REF.findall(text)):
                    line, col = src.doc.positions.at(path)
                    found.append(
                        Problem(
                            src.doc.file,
                            line,
                            col,
                            f"{WARNING}{'.'.join(map(str, path))} is an input-only credential "
                            f"({src.kind.model_name}.{name} is INPUT_ONLY) in plain text; pass it through a "
                            "variable listed under 'sensitive:' in cesync.yaml and set it from the environment",
                        )
                    )
    return found


_REF = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _leaves(value: object, path: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], str]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*path, str(k)))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, (*path, i))]
    return [(path, str(value))] if value is not None else []


def _scan_files(root: Path, paths: list[Path], read: dict[Path, str]) -> list[list[Problem]]:
    """Each file's warnings; read: the text of the files already read (the others are read here)."""
    out: list[list[Problem]] = []
    cache = parsecache.current()
    for path in paths:
        display = display_path(path, root)
        text = read.get(path) or read_text(path, display)
        if not isinstance(text, str):
            out.append([])
            continue
        # A text's warnings depend on it and its name alone: kept with its parse between runs
        key = cache.key(b"c", f"{display}\0{text}") if cache is not None else b""
        found = cache.get(key) if cache is not None else MISSING
        if not (isinstance(found, list) and all(isinstance(t, tuple) and len(t) == 4 for t in found)):
            found = [astuple(p) for p in scan_text(text, display)]
            if cache is not None:
                cache.put(key, found)
        out.append([Problem(*t) for t in found])
    return out


def _includes(data: object, base: Path, root: Path) -> list[Path]:
    """The files data includes that resolve inside root (resolved), resolved."""
    found: list[Path] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key in INCLUDABLE and isinstance(value, dict) and isinstance(value.get("file"), str):
                target = resolved_below(base / value["file"], root)
                if target.is_relative_to(root) and target.is_file():
                    found.append(target)
            else:
                found += _includes(value, base, root)
    elif isinstance(data, list):
        for item in data:
            found += _includes(item, base, root)
    return found
