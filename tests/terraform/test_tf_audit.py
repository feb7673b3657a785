"""Cross-checks of terraform/ against the adapters and the config, and `from-terraform` edge cases.

The controller's permissions in each module cover every cloud API call its adapter makes (read from
the adapter's source, so a new call without a permission fails here); each module output has the
shape its config key takes; and `burster config from-terraform` never echoes a sensitive output.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest

from burster.config import BursterConfig, load_config, parse_config
from burster.errors import ConfigError, InputError
from burster.tfconfig import _OWNER, OUTPUT_KEYS, SHARED_KEYS, config_from_terraform, parse_outputs
from tests.terraform.hcl import CLOUDS, as_list, module

PROVIDERS = Path(__file__).resolve().parents[2] / "providers"


def _source(cloud: str) -> str:
    return "\n".join(p.read_text() for p in sorted((PROVIDERS / cloud).glob("*.py")))


def _aws_granted() -> set[str]:
    doc = module("aws").data["aws_iam_policy_document"]["controller"]
    statements = as_list(doc.get("statement")) + [
        c for d in as_list(doc.get("dynamic")) for c in as_list(d["statement"]["content"])
    ]
    return {a for st in statements for a in st["actions"]}


def test_aws_policy_grants_every_call_the_adapter_makes() -> None:
    """Each ``self._call("ec2:X", ...)`` of providers/aws names the IAM action it needs."""
    src = _source("aws")
    calls = re.findall(r"_call\(\s*\"([a-z0-9]+):([A-Za-z]+)\"", src)
    assert len(calls) == src.count("self._call("), "an AWS call without its action name as first argument"
    # SQS authorizes a batch call by its single-message action
    used = {f"{svc}:{action.removesuffix('Batch')}" for svc, action in calls}
    assert {"ec2:CreateFleet", "ec2:TerminateInstances", "sqs:ReceiveMessage"} <= used
    granted = _aws_granted()
    assert used <= granted, f"calls without a permission: {sorted(used - granted)}"
    # CreateFleet (instant) launches with RunInstances under the caller, tags on create, passes the node
    # role; KMS only with customer keys. Nothing else: no read the adapter does not make (least privilege).
    implicit = {
        "ec2:RunInstances",
        "ec2:CreateTags",
        "iam:PassRole",
        "kms:Decrypt",
        "kms:GenerateDataKeyWithoutPlaintext",
        "kms:CreateGrant",
    }
    assert granted - used <= implicit, f"unexplained permissions: {sorted(granted - used - implicit)}"


def test_aws_price_list_reads_are_not_region_scoped() -> None:
    """The Price List API answers only in us-east-1 (and two others): a RequestedRegion condition of the
    module's region would deny every on-demand price read outside those regions."""
    doc = module("aws").data["aws_iam_policy_document"]["controller"]
    pricing = [s for s in as_list(doc["statement"]) if any(a.startswith("pricing:") for a in s["actions"])]
    assert len(pricing) == 1 and "condition" not in pricing[0]
    assert 'PRICING_REGION = "us-east-1"' in _source("aws")


# What each GCP SDK method the adapter calls is authorized by (instances.insert from a template that
# sets labels, metadata, a service account and tags, with a new boot disk in a subnetwork).
GCP_NEEDS = {
    ("instances", "insert_unary"): {
        "compute.instances.create",
        "compute.instances.setLabels",
        "compute.instances.setMetadata",
        "compute.instances.setServiceAccount",
        "compute.instances.setTags",
        "compute.disks.create",
        "compute.subnetworks.use",
        "compute.instanceTemplates.useReadOnly",
    },
    ("instances", "get"): {"compute.instances.get"},
    ("instances", "delete_unary"): {"compute.instances.delete"},
    ("instances", "aggregated_list"): {"compute.instances.list"},
    ("zone_operations", "wait"): {"compute.zoneOperations.get"},
    ("global_operations", "aggregated_list"): {"compute.globalOperations.list"},
    ("catalog", "list_skus"): set(),  # the Cloud Billing catalog needs only the enabled API
}


def test_gcp_role_grants_every_call_the_adapter_makes() -> None:
    calls = set(re.findall(r"self\._c\.(\w+)\.(\w+)\(", _source("gcp")))
    assert calls and calls <= set(GCP_NEEDS), f"unmapped GCP calls: {sorted(calls - set(GCP_NEEDS))}"
    gcp = module("gcp")
    granted = set(gcp.locals["controller_permissions"])
    needed = set().union(*(GCP_NEEDS[c] for c in calls))
    assert needed <= granted, f"missing: {sorted(needed - granted)}"
    assert "compute.disks.create" in needed and "compute.instanceTemplates.useReadOnly" in needed


def test_gcp_external_ip_template_comes_with_its_permission() -> None:
    """A template with an access config (external_ip = true) makes instances.insert check
    compute.subnetworks.useExternalIp: without it every launch was refused with 403."""
    gcp = module("gcp")
    perms = gcp.resource("google_project_iam_custom_role", "controller")["permissions"]
    assert isinstance(perms, str) and "local.controller_permissions" in perms
    assert re.search(r'var\.external_ip \? \["compute\.subnetworks\.useExternalIp"\] : \[\]', perms), perms
    assert "compute.subnetworks.useExternalIp" not in gcp.locals["controller_permissions"]  # only with it
    tpl = gcp.resource("google_compute_instance_template", "gpu")
    access = as_list(as_list(tpl["network_interface"])[0]["dynamic"])[0]["access_config"]
    assert "var.external_ip" in access["for_each"]


AZURE_NEEDS = {
    "list": {"Microsoft.Compute/virtualMachines/read"},
    "get": {"Microsoft.Compute/virtualMachines/read"},
    "instance_view": {"Microsoft.Compute/virtualMachines/instanceView/read"},
    "begin_create_or_update": {
        "Microsoft.Compute/virtualMachines/write",
        "Microsoft.Compute/disks/write",
        "Microsoft.Network/networkInterfaces/write",
        "Microsoft.Network/networkInterfaces/join/action",
        "Microsoft.Network/virtualNetworks/subnets/join/action",
        "Microsoft.Compute/locations/operations/read",
    },
    "begin_delete": {
        "Microsoft.Compute/virtualMachines/delete",
        "Microsoft.Compute/disks/delete",
        "Microsoft.Network/networkInterfaces/delete",
        "Microsoft.Compute/locations/operations/read",
    },
    "list_by_resource_group": {"Microsoft.Compute/sshPublicKeys/read"},  # launch records
    "create": {"Microsoft.Compute/sshPublicKeys/write"},
    "delete": {"Microsoft.Compute/sshPublicKeys/delete"},
}


def test_azure_role_grants_every_call_the_adapter_makes() -> None:
    src = _source("azure")
    calls = set(re.findall(r"self\._(?:vms|ops)\.(\w+)\b", src))
    assert calls and calls <= set(AZURE_NEEDS), f"unmapped Azure calls: {sorted(calls - set(AZURE_NEEDS))}"
    role = module("azure").resource("azurerm_role_definition", "controller")
    granted = set(as_list(role["permissions"])[0]["actions"])
    needed = set().union(*(AZURE_NEEDS[c] for c in calls))
    assert needed <= granted, f"missing: {sorted(needed - granted)}"


def _shape_of_field(cloud: str, key: str) -> str:
    section = BursterConfig().controller if key == "cluster" else getattr(BursterConfig().clouds, cloud)
    hint = typing.get_type_hints(type(section))[key]
    origin = typing.get_origin(typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint)
    return {tuple: "list", dict: "map"}.get(origin, "string")  # type: ignore[arg-type]


def _shape_of_output(root: Any, expr: Any) -> str:
    """The shape of an output's ``value``: a literal (python-hcl2 parses it), a for-expression, a
    variable (its declared type) or a resource attribute (a string)."""
    if isinstance(expr, list) or expr.startswith("${["):
        return "list"
    if isinstance(expr, dict) or expr.startswith("${{"):
        return "map"
    var = re.fullmatch(r"\$\{var\.(\w+)\}", expr)
    if var:
        typ = root.variables[var.group(1)]["type"]
        return (
            "list"
            if typ.startswith("${list(")
            else "map"
            if typ.startswith(("${object(", "${map("))
            else ("string" if typ == "${string}" else typ)
        )
    assert re.fullmatch(r"\$\{[\w.]+\.(id|arn|url|email|name|location|subscription_id)\}", expr), expr
    return "string"


@pytest.mark.parametrize("cloud", CLOUDS)
def test_module_outputs_have_the_shape_of_their_config_keys(cloud: str) -> None:
    """A list output for an array key, a map for a table, a string for a string: a module output of
    the wrong shape would only fail at `from-terraform` after an apply."""
    root = module(cloud)
    for name, body in root.outputs.items():
        assert _shape_of_output(root, body["value"]) == _shape_of_field(cloud, name), f"{cloud}.{name}"
        assert body.get("sensitive") is not True  # config keys hold identifiers, never secrets


def test_config_keys_belong_to_one_cloud_each() -> None:
    """An output is placed by its name alone, so no key may be shared by two clouds' sections."""
    assert sum(len(set(keys) - set(SHARED_KEYS)) for keys in OUTPUT_KEYS.values()) == len(_OWNER)
    assert all(set(SHARED_KEYS) <= set(keys) for keys in OUTPUT_KEYS.values())  # (shared: placed by the root)


def _out(value: Any, *, sensitive: bool | None = False) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "string", "value": value}
    if sensitive is not None:
        entry["sensitive"] = sensitive
    return entry


def _text(**outputs: dict[str, Any]) -> str:
    return json.dumps(outputs)


@pytest.mark.parametrize(
    "outputs",
    [
        {"regions": _out("SeCrEt-vAlUe-1", sensitive=True)},
        {"regions": _out(["us-east-1"]), "launch_template_ids": _out({"A100": ["SeCrEt-vAlUe-1"]}, sensitive=True)},
        {"azure": _out({"subscription_id": ["SeCrEt-vAlUe-1"], "location": "eastus"}, sensitive=True)},
        {"regions": _out("SeCrEt-vAlUe-1", sensitive=None)},  # no "sensitive" field: assume it is
    ],
)
def test_sensitive_output_values_never_appear_in_errors(outputs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_terraform([("x.json", json.dumps(outputs))])
    assert "SeCrEt" not in str(err.value)
    assert re.search(r"clouds\.(aws|azure)\.\w+", str(err.value))  # still names the key to fix


def test_non_sensitive_bad_value_is_still_shown() -> None:
    with pytest.raises(ConfigError, match=r"clouds\.aws\.regions: .*\(got 'us-east-1'\)"):
        config_from_terraform([("x.json", _text(regions=_out("us-east-1"), subnet_ids=_out(["s"], sensitive=True)))])


def test_sensitive_output_is_still_written() -> None:
    text = config_from_terraform([("x.json", _text(interruption_queue_url=_out("https://q", sensitive=True)))])
    assert parse_config(_loads(text)).clouds.aws.interruption_queue_url == "https://q"


def _loads(text: str) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(text)


def test_dotted_key_in_cloud_object_is_not_taken_for_its_last_part() -> None:
    """``output "aws" { value = {"x.regions" = ...} }`` named no config key; it was read as regions."""
    with pytest.raises(ConfigError, match=r"output 'aws\.x\.regions' is not a Burster config key"):
        config_from_terraform([("m.json", _text(aws=_out({"x.regions": ["eu-west-1"]})))])


def test_parse_outputs_leaves_out_nulls() -> None:
    assert parse_outputs(_text(regions=_out(None), zones=_out(["z"])), "x.json") == {"zones": ["z"]}


def test_null_inside_cloud_object_is_left_out() -> None:
    module_out = {"regions": ["eu-west-1"], "interruption_queue_url": None}
    text = config_from_terraform([("m.json", _text(aws=_out(module_out)))])
    assert "interruption_queue_url" not in text
    assert parse_config(_loads(text)).clouds.aws.regions == ("eu-west-1",)


def test_unpaired_surrogate_in_a_map_key_is_an_error_that_can_be_printed() -> None:
    """A map key with an unpaired surrogate got through, and printing the TOML crashed."""
    text = '{"launch_template_ids": {"sensitive": false, "value": {"A\\ud800": "lt-1"}}}'
    with pytest.raises(ConfigError, match="not valid Unicode") as err:
        config_from_terraform([("x.json", text)])
    message = str(err.value)
    message.encode("utf-8")
    assert message.startswith("clouds.aws.launch_template_ids.A\\ud800:")


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (
            {
                "format_version": "1.0",
                "terraform_version": "1.11.4",
                "values": {"outputs": {"regions": _out(["us-east-1"])}, "root_module": {}},
            },
            "`terraform show -json` output",
        ),
        ({"format_version": "1.2", "planned_values": {"outputs": {}}}, "`terraform show -json` output"),
        (
            {
                "version": 4,
                "terraform_version": "1.11.4",
                "serial": 3,
                "lineage": "l",
                "outputs": {"regions": {"value": ["us-east-1"], "type": ["tuple", ["string"]]}},
                "resources": [],
            },
            "a Terraform state file",
        ),
    ],
)
def test_show_json_and_state_files_name_the_command_to_run(data: dict[str, Any], what: str) -> None:
    with pytest.raises(InputError, match=re.escape(f"x.json: this is {what}, not `terraform output -json`")):
        config_from_terraform([("x.json", json.dumps(data))])


def test_outputs_named_like_state_keys_are_still_outputs() -> None:
    text = config_from_terraform([("x.json", _text(regions=_out(["us-east-1"]), outputs=_out(None)))])
    assert text.startswith("[clouds.aws]")


def _run(files: list[str]) -> int:
    from burster.cli import config_cmd

    parser = argparse.ArgumentParser(prog="burster")
    config_cmd.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["config", "from-terraform", *files])
    code: int = args.func(args)
    return code


def test_cli_reads_utf8_with_bom(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "aws.json"
    path.write_bytes(b"\xef\xbb\xbf" + _text(regions=_out(["us-east-1"])).encode())
    assert _run([str(path)]) == 0
    assert capsys.readouterr().out.startswith("[clouds.aws]\n")


def test_cli_names_a_file_that_is_not_utf8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    utf16 = tmp_path / "aws.json"
    utf16.write_bytes(_text(regions=_out(["us-east-1"])).encode("utf-16"))
    with pytest.raises(InputError, match=rf"{re.escape(str(utf16))} is not UTF-8 text \(UTF-16: .*Out-File"):
        _run([str(utf16)])
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"location": {"value": "\xe9"}}')
    with pytest.raises(InputError, match=rf"{re.escape(str(latin))} is not UTF-8 text; expected"):
        _run([str(latin)])
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"\xff\xfe{")))
    with pytest.raises(InputError, match=r"<stdin> is not UTF-8 text \(UTF-16"):
        _run(["-"])


def test_generated_sections_load_with_the_rest_of_a_config_file(tmp_path: Path) -> None:
    """The documented `>> burster.toml`: the printed sections after an existing config load as one file."""
    outputs = {
        "aws": _out({"regions": ["eu-west-1"], "launch_template_ids": {"A 100": 'lt-"1"'}}),
        "image_reference": _out({"publisher": "p", "offer": "o", "sku": "s", "version": "latest"}),
    }
    path = tmp_path / "burster.toml"
    path.write_text(
        '[pool]\nnodes = 4\n\n[controller]\ncluster = "research"\n\n'
        + config_from_terraform([("x.json", json.dumps(outputs))])
    )
    cfg = load_config(path)
    assert cfg.pool.nodes == 4 and cfg.controller.cluster == "research"
    assert cfg.clouds.aws.enabled and cfg.clouds.aws.launch_template_ids == {"A 100": 'lt-"1"'}
    assert cfg.clouds.azure.enabled and cfg.clouds.azure.image_reference["version"] == "latest"
    assert not cfg.clouds.gcp.enabled
