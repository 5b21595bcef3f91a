"""YAML configuration text read safely, with duplicate keys refused.

PyYAML's ``safe_load`` keeps the last of two equal keys in a mapping and says nothing, so a
file that sets ``streams`` twice runs with whichever came second. YAML 1.2 requires keys to be
unique (https://yaml.org/spec/1.2.2/#mapping); this loader refuses the second one, at any depth,
with the line it is on. Merge keys (``<<: *base``) still override what they merge, as YAML
defines them to.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode

_MERGE = "tag:yaml.org,2002:merge"


class UniqueKeyLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no type hints
    """``yaml.SafeLoader`` that refuses a mapping's key given twice (the error marks the second)."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}  # key -> the line it is first on
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                if key in first:
                    raise ConstructorError(
                        None, None, f"duplicate key {key!r} (first on line {first[key]})", key_node.start_mark
                    )
            except TypeError:  # an unhashable key: the base class refuses it in its own words
                continue
            first[key] = key_node.start_mark.line + 1
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def load(text: str) -> Any:
    """The data of a YAML text; ``yaml.YAMLError`` (with ``problem_mark``) when it is not valid."""
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
