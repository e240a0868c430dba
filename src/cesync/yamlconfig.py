"""Every ruamel.yaml ``YAML()`` cesync makes, configured in one place (a test holds to it).

Reading data (``safe``), reading a repo file with positions (``positioned``), writing YAML
for people (``writer``), editing a file in place (``editor``, which keeps comments, quoting
and the file's indentation), and dumping plain data in block style (``block_dumper``).
The emulator reads and writes archives and OpenAPI documents with ``safe`` too: a parser
setting, not a reading of the API.
"""

from __future__ import annotations

from ruamel.yaml import YAML

__all__ = ["INDENT", "block_dumper", "editor", "positioned", "safe", "writer"]

# cesync's own layout: (mapping, sequence, offset), as `cesync fmt` and export write files.
INDENT = (2, 4, 2)
WIDTH = 4096  # long lines stay long: a line break inside a value is a change the author did not make


def safe() -> YAML:
    """Plain data in and out (dicts, lists, scalars), no tags run."""
    return YAML(typ="safe", pure=True)


def block_dumper() -> YAML:
    """Plain data out in block style, keys in the order given."""
    yaml = safe()
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]  # keep the author's key order
    return yaml


def positioned() -> YAML:
    """A repo file read as nodes that know their line and column; a repeated key is an error."""
    yaml = YAML(typ="rt", pure=True)
    yaml.allow_duplicate_keys = False
    return yaml


def writer() -> YAML:
    """YAML for people, in cesync's layout."""
    yaml = YAML(typ="rt", pure=True)
    yaml.width = WIDTH
    yaml.indent(mapping=INDENT[0], sequence=INDENT[1], offset=INDENT[2])
    return yaml


def editor(indent: tuple[int, int, int] = INDENT) -> YAML:
    """A file loaded and dumped back as it was written: quoting and comments kept, in the
    given indentation (a file's own, or cesync's)."""
    yaml = YAML(typ="rt", pure=True)
    yaml.preserve_quotes = True
    yaml.width = WIDTH
    mapping, sequence, offset = indent
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    yaml.brace_single_entry_mapping_in_flow_sequence = True  # [{ref: x}] stays so, not [ref: x]
    return yaml
