"""Load the Terraform modules with python-hcl2 into plain dicts (quotes and block markers removed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hcl2

TERRAFORM = Path(__file__).resolve().parents[2] / "terraform"
CLOUDS = ("aws", "gcp", "azure")


def _clean(node: Any) -> Any:
    """python-hcl2 >= 5 keeps string quotes and adds ``__is_block__``; older versions do neither."""
    if isinstance(node, dict):
        return {_clean(k): _clean(v) for k, v in node.items() if k != "__is_block__"}
    if isinstance(node, list):
        return [_clean(v) for v in node]
    if isinstance(node, str) and len(node) >= 2 and node[0] == node[-1] == '"':
        return node[1:-1]
    return node


class Root:
    """The merged blocks of every ``*.tf`` file in one module or example directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.resources: dict[str, dict[str, dict[str, Any]]] = {}
        self.data: dict[str, dict[str, dict[str, Any]]] = {}
        self.outputs: dict[str, dict[str, Any]] = {}
        self.variables: dict[str, dict[str, Any]] = {}
        self.locals: dict[str, Any] = {}
        self.modules: dict[str, dict[str, Any]] = {}
        for path in sorted(directory.glob("*.tf")):
            with path.open() as fh:
                doc = _clean(hcl2.load(fh))
            for kind, target in (("resource", self.resources), ("data", self.data)):
                for block in doc.get(kind, []):
                    for rtype, named in block.items():
                        for name, body in named.items():
                            target.setdefault(rtype, {})[name] = body
            for kind, target in (("output", self.outputs), ("variable", self.variables),
                                 ("module", self.modules)):
                for block in doc.get(kind, []):
                    target.update(block)
            for block in doc.get("locals", []):
                self.locals.update(block)

    def resource(self, rtype: str, name: str) -> dict[str, Any]:
        return self.resources[rtype][name]


def module(cloud: str) -> Root:
    return Root(TERRAFORM / "modules" / cloud)


def example(cloud: str) -> Root:
    return Root(TERRAFORM / "examples" / cloud)


def as_list(value: Any) -> list[Any]:
    """A block or attribute that may be written once or many times, as a list."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]
