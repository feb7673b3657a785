"""The docs say what the code does: modules, paths, make targets, JSON keys and IAM statements they name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from burster.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "terraform" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PACKAGES = ("burster", "policies", "providers", "bench")
CLOUDS = ("aws", "gcp", "azure")


def _layers() -> str:
    """The code block under docs/architecture.md's "## Layers"."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    return text.split("## Layers", 1)[1].split("```")[1]


def _modules() -> list[Path]:
    return sorted(
        p.relative_to(ROOT)
        for pkg in PACKAGES
        for p in (ROOT / pkg).rglob("*.py")
        if p.name != "__init__.py" and "versions" not in p.parts
    )


def test_readme_starts_with_make_demo_and_make_test_and_every_make_target_named_exists() -> None:
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```", 2)[1].splitlines()[1:3]
    assert [line.split("#")[0].strip() for line in first_block] == ["make demo", "make test"]
    targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    for doc in DOCS:
        for target in re.findall(r"`make ([a-z][\w-]*)", doc.read_text()):
            assert target in targets, f"{doc.relative_to(ROOT)} names `make {target}`, which the Makefile lacks"


def test_every_module_is_named_in_architecture_md() -> None:
    """Each module by its name, except those of a package the layers name whole (cli/, migrations/, a
    cloud's adapter: its files are in docs/providers/CLOUD.md)."""
    layers = _layers()
    whole = {("burster", "cli"), ("burster", "migrations"), *(("providers", p) for p in (*CLOUDS, "nvml", "fake"))}
    missing = []
    for path in _modules():
        if path.parts[:2] in whole:
            assert f"{path.parts[1]}/" in layers, path
        elif path == Path("burster/__main__.py"):
            assert "python -m burster" in layers
        elif not re.search(rf"\b{re.escape(path.stem)}\b", layers):
            missing.append(str(path))
    assert not missing, f"docs/architecture.md's layers do not name {missing}"


def test_every_file_architecture_md_names_exists() -> None:
    """Each ``x.py`` in a layer is a module of that layer's package; each ``dir/`` a folder."""
    sections = re.split(r"^(?=\S)", _layers(), flags=re.MULTILINE)
    roots = {
        "contract": ["burster"],
        "policies/": ["policies"],
        "providers/": ["providers"],
        "runtime": ["burster"],
        "data": ["burster"],
        "wiring": ["burster"],
        "entry": ["burster", "bench"],
    }
    for section in (s for s in sections if s.strip()):
        bases = next(v for k, v in roots.items() if section.startswith(k))
        for name in re.findall(r"(?<![\w/.])([a-z_]+\.py)\b", section):
            assert any(list((ROOT / b).rglob(name)) for b in bases), f"{name} ({section.split()[0]})"
        for folder in re.findall(r"(?<![\w./-])([a-z_]+)/(?=[\s,)(:])", section):
            assert any(list((ROOT / b).rglob(folder)) or (ROOT / b).name == folder for b in bases), folder
    for module in re.findall(r"\bbench\.(\w+)", _layers()):
        assert (ROOT / "bench" / f"{module}.py").exists(), f"bench.{module}"


def test_each_cloud_s_file_table_lists_exactly_its_modules() -> None:
    for cloud in CLOUDS:
        doc = (ROOT / "docs" / "providers" / f"{cloud}.md").read_text()
        listed = set(re.findall(r"^\| `(\w+\.py)` \|", doc, re.MULTILINE))
        present = {p.name for p in (ROOT / "providers" / cloud).glob("*.py") if p.name != "__init__.py"}
        assert listed == present, cloud


def test_every_repository_path_the_docs_name_exists() -> None:
    path = re.compile(r"(?<![\w./-])((?:burster|policies|providers|bench|tests|terraform|docs)/[\w./-]*[\w/])")
    for doc in DOCS:
        for found in set(path.findall(doc.read_text())):
            name = found.rstrip("/.")
            assert (ROOT / name).exists() or (doc.parent / name).exists(), f"{doc.relative_to(ROOT)}: {found}"


GENERIC = "job_id,submit_time,gpus,runtime_s\na,2026-01-05T00:00:00Z,8,3600\nb,2026-01-05T00:10:00Z,8,3600\n"


def test_simulate_json_keys_are_the_ones_simulation_md_lists_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(GENERIC)
    assert main(["simulate", "--trace", str(trace), "--pool-nodes", "1", "--json"]) == 0
    keys = list(json.loads(capsys.readouterr().out))
    doc = (ROOT / "docs" / "simulation.md").read_text()
    listed = doc.split("with `--json` one object with `", 1)[1].split("`", 1)[0]
    assert keys == [k.strip() for k in listed.split(",")]


def test_bench_records_have_the_keys_evaluation_md_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("highspy")
    trace = tmp_path / "jobs.csv"
    trace.write_text(GENERIC)
    argv = [
        "bench",
        "--trace",
        str(trace),
        "--pool-nodes",
        "1",
        "--seeds",
        "0",
        "--policies",
        "burster",
        "--workers",
        "1",
        "--json",
    ]
    assert main(argv) == 0
    (record,) = json.loads(capsys.readouterr().out)
    section = (ROOT / "docs" / "evaluation.md").read_text().split("### Records", 1)[1].split("\n### ", 1)[0]
    listed = {k for row in re.findall(r"^\| (`[^|]*)\|", section, re.MULTILINE) for k in re.findall(r"`(\w+)`", row)}
    assert listed == set(record)


def test_terraform_readme_lists_every_statement_of_the_aws_controller_policy() -> None:
    iam = (ROOT / "terraform" / "modules" / "aws" / "iam.tf").read_text()
    policy = iam.split('data "aws_iam_policy_document" "controller" {', 1)[1].split('\ndata "', 1)[0]
    sids = set(re.findall(r'sid\s*=\s*"(\w+)"', policy))
    readme = (ROOT / "terraform" / "README.md").read_text()
    table = set(re.findall(r"^\| (\w+)(?: \([^)]*\))? \|", readme, re.MULTILINE))
    assert "TerminateOnlyOwnInstances" in sids and not sids - table, f"terraform/README.md lacks {sids - table}"


def test_azure_md_names_every_action_of_the_azure_role() -> None:
    identity = (ROOT / "terraform" / "modules" / "azure" / "identity.tf").read_text()
    actions = re.findall(r'"(Microsoft\.\w+/[\w/]+)"', identity)
    doc = (ROOT / "docs" / "providers" / "azure.md").read_text()
    named = set(re.findall(r"`(Microsoft\.[\w/]+)`", doc))
    for row in re.findall(r"^\| `(Microsoft\.[\w/]+)/\w+`((?:, `[\w/]+`)*)", doc, re.MULTILINE):
        named |= {f"{row[0]}/{a}" for a in re.findall(r"`([\w/]+)`", row[1])}
    assert len(actions) > 10 and not [a for a in actions if a not in named]
