"""The import contracts of pyproject.toml hold (policies stay pure; adapters stay outside)."""

from __future__ import annotations

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
        for line in path.read_text().splitlines():
            words = line.split()
            if not words or words[0] not in ("import", "from"):
                continue
            module = words[1]
            root = module.split(".")[0]
            if root == "burster":
                assert module in contract, f"{path.name} imports {module}"
            elif root not in allowed_roots:
                assert root in sys.stdlib_module_names, f"{path.name} imports {module}"
