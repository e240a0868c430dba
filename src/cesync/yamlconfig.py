"""Every ruamel.yaml ``YAML()`` cesync makes, configured in one place (a test holds to it).

Reading data (``safe``), reading a repo file with positions (``positioned``), writing YAML
for people (``writer``), editing a file in place (``editor``, which keeps comments, quoting
and the file's indentation), and dumping plain data in block style (``block_dumper``).
The emulator reads and writes archives and OpenAPI documents with ``safe`` too: a parser
setting, not a reading of the API.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.representer import RoundTripRepresenter

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
    yaml.Constructor = _EditorConstructor
    yaml.Representer = _EditorRepresenter
    return yaml


class _WrittenFloat(float):
    """A float read by the editor, which it writes back as it was written."""

    __slots__ = ("text",)
    text: str


class _EditorConstructor(RoundTripConstructor):
    """ruamel's round-trip reader, with floats that remember their text.

    ruamel writes a float back from its value, in its own formatting, which loses the last
    digit of some (5.799650104237149e+290 comes back ...148e+290): an edit of one key of a
    file would change a number the edit did not touch."""

    def construct_written_float(self, node: ScalarNode) -> Any:
        value = self.construct_yaml_float(node)
        if node.anchor:  # an anchored float keeps ruamel's own type, which carries the anchor
            return value
        out = _WrittenFloat(value)
        out.text = node.value
        return out


class _EditorRepresenter(RoundTripRepresenter):
    def represent_written_float(self, data: _WrittenFloat) -> Any:
        return self.represent_scalar("tag:yaml.org,2002:float", data.text)


# On subclasses: add_constructor and add_representer change the class they are called on,
# so every other YAML() keeps ruamel's own behaviour.
_EditorConstructor.add_constructor("tag:yaml.org,2002:float", _EditorConstructor.construct_written_float)
_EditorRepresenter.add_representer(_WrittenFloat, _EditorRepresenter.represent_written_float)
