"""Every module and example output is a real Burster config key (a cloud's, or controller.cluster);
checkov skips carry reasons."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from burster.config import BursterConfig
from burster.tfconfig import OUTPUT_KEYS
from tests.terraform.hcl import CLOUDS, TERRAFORM, example, module

EXPECTED = {
    "aws": {"regions", "launch_template_ids", "subnet_ids", "security_group_ids", "instance_profile_arn",
            "interruption_queue_url", "cluster"},
    "gcp": {"project", "zones", "instance_templates", "node_service_account", "network", "subnetwork", "cluster"},
    "azure": {"subscription_id", "resource_group", "location", "subnet_id", "identity_id", "image_reference",
              "cluster"},
}


@pytest.mark.parametrize("cloud", CLOUDS)
def test_module_outputs_are_config_keys(cloud: str) -> None:
    fields = type(getattr(BursterConfig().clouds, cloud)).model_fields
    outputs = module(cloud).outputs
    assert set(outputs) == EXPECTED[cloud]
    assert set(outputs) - {"cluster"} <= set(fields) - {"enabled"}
    assert set(outputs) - {"cluster"} <= set(OUTPUT_KEYS[cloud])
    assert outputs["cluster"]["value"] == "${var.cluster}"
    assert "cluster" in type(BursterConfig().controller).model_fields
    for name, body in outputs.items():
        assert body["description"].startswith("controller.cluster" if name == "cluster" else f"clouds.{cloud}.{name}")


@pytest.mark.parametrize("cloud", CLOUDS)
def test_example_reexports_module_outputs(cloud: str) -> None:
    root = example(cloud)
    assert root.modules["burster"]["source"] == f"../../modules/{cloud}"
    assert set(root.outputs) == EXPECTED[cloud]
    for name, body in root.outputs.items():
        assert body["value"] == f"${{module.burster.{name}}}"


@pytest.mark.parametrize("cloud", CLOUDS)
def test_example_passes_only_module_variables(cloud: str) -> None:
    inputs = set(example(cloud).modules["burster"]) - {"source"}
    assert inputs <= set(module(cloud).variables)


def test_checkov_skips_carry_reasons() -> None:
    for path in TERRAFORM.rglob("*.tf"):
        for line in path.read_text().splitlines():
            if "checkov:skip" in line:
                assert re.search(r"#checkov:skip=CKV2?_[A-Z]+_\d+:\s*\S.{20,}", line), f"{path}: {line}"


def test_terraform_fmt() -> None:
    terraform = shutil.which("terraform")
    if terraform is None:
        pytest.skip("terraform is not installed; terraform/check.sh skips the fmt check too")
    proc = subprocess.run([terraform, "fmt", "-check", "-recursive"], cwd=TERRAFORM, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, f"needs terraform fmt: {proc.stdout}"
