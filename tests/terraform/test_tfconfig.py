"""`burster config from-terraform`: terraform output JSON to validated [clouds.*] TOML."""

from __future__ import annotations

import argparse
import io
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from burster.config import BursterConfig, parse_config
from burster.errors import ConfigError, InputError
from burster.tfconfig import config_from_terraform, parse_outputs, render_toml

DATA = Path(__file__).parent / "data"
SAMPLES = {cloud: DATA / f"{cloud}_outputs.json" for cloud in ("aws", "gcp", "azure")}


def _src(cloud: str) -> tuple[str, str]:
    return str(SAMPLES[cloud]), SAMPLES[cloud].read_text()


def _outputs(**values: Any) -> str:
    return json.dumps({k: {"sensitive": False, "type": "string", "value": v} for k, v in values.items()})


HEAD = '# these sections need [controller] cluster = "ml-research"\n'  # the samples' roots were applied for it


def _load(text: str) -> BursterConfig:
    """The config a user gets by appending ``text`` to a file whose [controller] names the samples' cluster."""
    return parse_config(tomllib.loads('[controller]\ncluster = "ml-research"\n' + text))


def test_each_sample_becomes_a_valid_section() -> None:
    for cloud in SAMPLES:
        text = config_from_terraform([_src(cloud)])
        assert text.startswith(f'{HEAD}[clouds.{cloud}]\nenabled = true\ncluster = "ml-research"\n')
        section = getattr(_load(text).clouds, cloud)
        assert section.enabled is True
        raw = json.loads(SAMPLES[cloud].read_text())
        for key, entry in raw.items():
            got = getattr(section, key)
            assert (list(got) if isinstance(got, tuple) else got) == entry["value"]


def test_aws_values() -> None:
    cfg = _load(config_from_terraform([_src("aws")]))
    lts = cfg.clouds.aws.launch_template_ids
    assert lts == {"A100": "lt-0a1b2c3d4e5f60001", "H100": "lt-0a1b2c3d4e5f60002"}
    assert cfg.clouds.aws.regions == ("us-east-1",)
    assert not cfg.clouds.gcp.enabled


def test_several_roots_at_once() -> None:
    text = config_from_terraform([_src(c) for c in SAMPLES])
    clouds = _load(text).clouds
    assert clouds.aws.enabled and clouds.gcp.enabled and clouds.azure.enabled
    assert clouds.azure.image_reference["offer"] == "ubuntu-hpc"


def test_cloud_filter_rejects_other_clouds_outputs() -> None:
    assert config_from_terraform([_src("gcp")], cloud="gcp").startswith(f"{HEAD}[clouds.gcp]")
    with pytest.raises(ConfigError, match=r"output '\w+' belongs to \[clouds.gcp\], not \[clouds.aws\]"):
        config_from_terraform([_src("gcp")], cloud="aws")


def test_the_cluster_the_roots_were_applied_for_must_be_the_controllers() -> None:
    """Nodes are tagged, and the AWS permissions scoped, by the modules' cluster: a controller of another
    would neither see those nodes nor be let launch them, so loading such a config fails, saying how."""
    text = config_from_terraform([_src("aws")])
    with pytest.raises(ConfigError, match=r"clouds.aws.cluster: its terraform was applied for cluster 'ml-research'"
                                          r".*set \[controller\] cluster = \"ml-research\""):
        parse_config(tomllib.loads(text))  # appended to a config of the default cluster
    assert _load(text).controller.cluster == "ml-research"
    disabled = tomllib.loads(text)
    disabled["clouds"]["aws"]["enabled"] = False
    assert not parse_config(disabled).clouds.aws.enabled  # a disabled cloud launches nothing: not checked
    other = ("b.json", _outputs(zones=["us-central1-a"], cluster="ml-prod"))
    with pytest.raises(ConfigError, match=r"applied for different clusters \(aws: 'ml-research', gcp: 'ml-prod'\)"):
        config_from_terraform([_src("aws"), other])
    nested = config_from_terraform([("n.json", _outputs(aws={"regions": ["us-east-1"], "cluster": "ml"}))])
    assert 'cluster = "ml"' in nested and nested.startswith('# these sections need [controller] cluster = "ml"')
    with pytest.raises(ConfigError, match=r"clouds.aws.cluster: String should match pattern"):
        config_from_terraform([("x.json", _outputs(regions=["us-east-1"], cluster="ML Research"))])
    with pytest.raises(ConfigError, match=r"x.json: output 'cluster' is every cloud's key, and no other output"):
        config_from_terraform([("x.json", _outputs(regions=None, cluster="ml"))])
    assert "cluster" not in config_from_terraform([("x.json", _outputs(regions=["us-east-1"]))])


def test_unknown_output_is_named() -> None:
    with pytest.raises(ConfigError, match="output 'controller_role_arn' is not a Burster config key"):
        config_from_terraform([("x.json", _outputs(regions=["us-east-1"], controller_role_arn="arn:x"))])
    with pytest.raises(ConfigError, match="output 'enabled'"):
        config_from_terraform([("x.json", _outputs(enabled=True))])


def test_cloud_named_object_output() -> None:
    module = {"regions": ["eu-west-1"], "subnet_ids": ["s-1"]}
    text = config_from_terraform([("m.json", _outputs(aws=module))])
    assert parse_config(tomllib.loads(text)).clouds.aws.regions == ("eu-west-1",)  # (no cluster: not checked)
    with pytest.raises(ConfigError, match=r"output 'aws\.project' is not a Burster config key"):
        config_from_terraform([("m.json", _outputs(aws={"project": "p"}))])


def test_null_outputs_are_left_out() -> None:
    text = config_from_terraform([("x.json", _outputs(regions=["us-east-1"], interruption_queue_url=None))])
    assert "interruption_queue_url" not in text
    with pytest.raises(InputError, match="every output is null"):
        config_from_terraform([("x.json", _outputs(regions=None))])


def test_conflicting_values_across_roots() -> None:
    a = ("a.json", _outputs(regions=["us-east-1"]))
    b = ("b.json", _outputs(regions=["eu-west-1"]))
    with pytest.raises(ConfigError, match=r"b.json: output 'regions': clouds.aws.regions is given twice"):
        config_from_terraform([a, b])
    assert config_from_terraform([a, a]).count("regions") == 1


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", r"x.json: not valid JSON at line 1, column 2"),
    ("", "x.json: empty input"),
    ("[1, 2]", "expected a JSON object of outputs, got list"),
    ("{}", "no outputs"),
    ('{"regions": ["us-east-1"]}', "output 'regions' has no \"value\""),
    ('{"n": {"value": ' + "9" * 5000 + "}}", r"x.json: not `terraform output -json` output \(Exceeds the limit"),
    ("[" * 100_000 + "]" * 100_000, r"x.json: not `terraform output -json` output"),
])
def test_malformed_input(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_outputs(text, "x.json")


def test_wrong_value_type_fails_validation_naming_key() -> None:
    with pytest.raises(ConfigError, match=r"clouds.aws.regions"):
        config_from_terraform([("x.json", _outputs(regions="us-east-1"))])
    with pytest.raises(ConfigError, match=r"clouds.gcp.instance_templates.A100"):
        config_from_terraform([("x.json", _outputs(instance_templates={"A100": 3}))])


def test_toml_quoting_round_trips() -> None:
    odd = {"A100 80GB": 'lt-"quoted"\\x', "t\u00e9st": "tab\there\nnew\u007fline\u0001"}
    text = render_toml({"aws": {"enabled": True, "launch_template_ids": odd, "regions": ["a"]}})
    assert tomllib.loads(text)["clouds"]["aws"]["launch_template_ids"] == odd


def _parser() -> argparse.ArgumentParser:
    from burster.cli import config_cmd

    parser = argparse.ArgumentParser(prog="burster")
    config_cmd.register(parser.add_subparsers(dest="command"))
    return parser


def test_cli_files_and_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    args = _parser().parse_args(["config", "from-terraform", "--cloud", "aws", str(SAMPLES["aws"])])
    assert args.func(args) == 0
    assert capsys.readouterr().out == config_from_terraform([_src("aws")], cloud="aws")

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(SAMPLES["gcp"].read_bytes())))
    args = _parser().parse_args(["config", "from-terraform"])
    assert args.func(args) == 0
    assert capsys.readouterr().out.startswith(f"{HEAD}[clouds.gcp]\n")


@pytest.mark.parametrize(("stdin", "message"), [
    (b'{"regions": {"value": ["\xff"]}}', "<stdin> is not UTF-8 text"),
    (b'{"regions": {"value": ["\\ud800"]}}', "clouds.aws.regions: the output holds text that is not valid Unicode"),
    (b'{"launch_template_ids": {"value": {"V100": null}}}',
     "clouds.aws.launch_template_ids.V100: cannot write NoneType value None as TOML (TOML has no null"),
])
def test_cli_text_toml_cannot_hold_names_the_key(stdin: bytes, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    args = _parser().parse_args(["config", "from-terraform", "--cloud", "aws"])
    with pytest.raises((InputError, ConfigError)) as err:
        args.func(args)
    assert message in str(err.value)


def test_cli_missing_file() -> None:
    args = _parser().parse_args(["config", "from-terraform", "/nonexistent/outputs.json"])
    with pytest.raises(InputError, match=r"cannot read /nonexistent/outputs\.json"):
        args.func(args)


def test_cli_rejects_unknown_cloud(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(["config", "from-terraform", "--cloud", "oci"])
    assert "invalid choice" in capsys.readouterr().err


def test_burster_main(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    from burster import cli

    assert "burster.cli.config_cmd" in cli.COMMANDS
    # Other subcommand modules may not exist yet in this tree; main() must work with this one alone.
    monkeypatch.setattr(cli, "COMMANDS", ("burster.cli.config_cmd",))
    assert cli.main(["config", "from-terraform", str(SAMPLES["azure"]), str(SAMPLES["aws"])]) == 0
    out = capsys.readouterr().out
    assert out.index("[clouds.aws]") < out.index("[clouds.azure]")
    bad = tmp_path / "bad.json"
    bad.write_text(_outputs(subnet="x"))
    assert cli.main(["config", "from-terraform", str(bad)]) == 2
    assert "output 'subnet' is not a Burster config key" in capsys.readouterr().err
    assert cli.main(["config"]) == 2
