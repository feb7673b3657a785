"""The import contracts of pyproject.toml hold (policies stay pure; adapters stay outside)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contracts_are_kept() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is a dev dependency: pip install -e '.[dev]'"
    done = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_policies_import_only_contracts_and_stdlib() -> None:
    allowed_roots = {"burster", "policies", "__future__"}
    contract = {"burster.model", "burster.plan", "burster.lifecycle", "burster.errors", "burster.billing",
                "burster.interfaces"}
    for path in (ROOT / "policies").glob("*.py"):
        modules: list[str] = []  # import statements only: a docstring line may start with "from"
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                assert not node.level and node.module, f"{path.name}: relative import"
                modules.append(node.module)
        for module in modules:
            root = module.split(".")[0]
            if root == "burster":
                assert module in contract, f"{path.name} imports {module}"
            elif root not in allowed_roots:
                assert root in sys.stdlib_module_names, f"{path.name} imports {module}"


def test_every_protocol_is_small() -> None:
    """DESIGN.md: small Protocols, at most five methods each (a larger one is split, as Pool is into
    PoolReader and PoolActuator)."""
    import inspect
    from typing import Protocol

    import burster.interfaces as interfaces

    protocols = [c for _, c in inspect.getmembers(interfaces, inspect.isclass)
                 if c.__module__ == interfaces.__name__ and Protocol in c.__mro__]
    assert {p.__name__ for p in protocols} >= {"CloudProvider", "PoolReader", "PoolActuator", "Pool"}
    for proto in protocols:
        own = [name for name, v in vars(proto).items() if callable(v) and not name.startswith("_")]
        assert len(own) <= 5, f"{proto.__name__} declares {len(own)} methods: {own}; split it"
