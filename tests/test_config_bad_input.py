"""Bad config files and values: a ConfigError naming the file and key, with no secret echoed back."""

from __future__ import annotations

from pathlib import Path

import pytest

from burster.cli import main
from burster.config import load_config, parse_config
from burster.errors import ConfigError


def _error(data: dict[str, object]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    return str(info.value)


@pytest.mark.parametrize(("section", "key"), [("aws", "endpoint_url"), ("gcp", "api_endpoint"),
                                              ("azure", "base_url")])
def test_a_url_password_is_never_echoed(tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str,
                                        key: str) -> None:
    path = tmp_path / "burster.toml"
    path.write_text(f'[clouds.{section}]\n{key} = ["https://AKIAEXAMPLE:s3cr3t-pw@host.example/x?sig=t0ken"]\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    msg = str(info.value)
    assert str(path) in msg and f"clouds.{section}.{key}" in msg and "host.example" in msg
    assert "s3cr3t-pw" not in msg and "AKIAEXAMPLE" not in msg and "t0ken" not in msg
    assert main(["offerings", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("burster: error: ") and "s3cr3t-pw" not in err


@pytest.mark.parametrize(("data", "key"), [
    ({"store": {"url": ["postgresql://burster:p@ss/w0rd@db:5432/burster"]}}, "store.url"),
    ({"controller": {"tick_s": "postgresql://burster:p@ss/w0rd@db:5432/burster"}}, "controller.tick_s"),
    ({"controller": {"cluster": "burster:p@ss/w0rd@db:5432"}}, "controller.cluster"),  # no scheme
    ({"clouds": {"aws": {"endpoint_url": [{"x": "https://u:p@ss/w0rd@db:5432/?sig=w0rd"}]}}}, "endpoint_url"),
])
def test_a_url_password_given_to_the_wrong_key_is_never_echoed(data: dict[str, object], key: str) -> None:
    msg = _error(data)
    assert key in msg and "db:5432" in msg and "p@ss" not in msg and "w0rd" not in msg


def test_a_config_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "burster.toml"
    path.write_bytes('[pool]\ngpu_model = "V\xe9100"\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8") as info:
        load_config(path)
    assert str(path) in str(info.value)


def test_a_config_path_that_is_a_folder_names_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder") as info:
        load_config(tmp_path)
    assert str(tmp_path) in str(info.value)


def test_pool_kind_is_a_choice_that_lists_the_valid_values() -> None:
    assert parse_config({"pool": {"kind": "sim"}}).pool.kind == "sim"
    msg = _error({"pool": {"kind": "slurm"}})
    assert "pool.kind" in msg and "'sim'" in msg and "'slurm'" in msg


def test_a_negative_team_budget_names_the_team() -> None:
    assert parse_config({"budget": {"team_usd": {"vision": 0, "nlp": 20.5}}}).budget.team_usd["vision"] == 0
    msg = _error({"budget": {"team_usd": {"vision": -5.0}}})
    assert "budget.team_usd.vision" in msg and "greater than or equal to 0" in msg


def test_an_interruption_notice_for_an_unknown_provider_names_it() -> None:
    assert parse_config({"cost": {"interruption_notice_s": {"aws": 60}}}).cost.interruption_notice_s == {
        "aws": 60.0, "gcp": 30.0, "azure": 30.0}
    msg = _error({"cost": {"interruption_notice_s": {"aws": 60, "oracle": 30}}})
    assert "cost.interruption_notice_s" in msg and "oracle" in msg and "valid: aws, gcp, azure" in msg
    assert "Value error" not in msg


def test_an_empty_pool_gpu_model_says_so() -> None:
    """(It used to pass, and every job was then said to need a model the pool did not have.)"""
    assert "pool.gpu_model: String should have at least 1 character" in _error({"pool": {"gpu_model": ""}})


@pytest.mark.parametrize(("data", "key"), [
    ({"pool": {"nodes": True}}, "pool.nodes"),
    ({"pool": {"nodes": "4"}}, "pool.nodes"),
    ({"cost": {"restart_overhead_s": True}}, "cost.restart_overhead_s"),
    ({"budget": {"total_usd": "100"}}, "budget.total_usd"),
    ({"policy": {"prewarm": 1}}, "policy.prewarm"),
    ({"guards": {"max_nodes": 2.5}}, "guards.max_nodes"),
])
def test_numbers_and_flags_are_not_coerced(data: dict[str, object], key: str) -> None:
    assert key in _error(data)


def test_valid_toml_still_parses_strictly(tmp_path: Path) -> None:
    """Arrays, enum strings and whole numbers for float keys stay valid."""
    path = tmp_path / "c.toml"
    path.write_text('[pool]\nnodes = 4\nrequeue = "back"\n[cost]\nrestart_overhead_s = 300\n'
                    'interruption_notice_s = {aws = 120, gcp = 30, azure = 30}\n[budget]\nteam_usd = {vision = 2000}\n'
                    '[guards]\nprotected_node_ids = ["n1"]\n[clouds.aws]\nenabled = true\nregions = ["us-west-2"]\n'
                    'subnet_ids = ["subnet-1"]\n[clouds.gcp]\nzones = ["us-central1-a"]\n')
    cfg = load_config(path)
    assert cfg.pool.nodes == 4 and cfg.clouds.aws.regions == ("us-west-2",) and cfg.guards.protected_node_ids == ("n1",)
    assert cfg.cost.restart_overhead_s == 300.0 and cfg.budget.team_usd == {"vision": 2000.0}
