"""What users type and feed in, at the edges: every documented config default and range is the code's,
a bad value is echoed without any part of a password, and the CLI's input checks hold at their bounds."""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from burster.app import build_policy, check_window, cost_model
from burster.cli import main
from burster.cli.agent import run_agent
from burster.config import BursterConfig, load_config, parse_config
from burster.errors import ConfigError, InputError
from burster.redact import redact, redact_url, redact_value
from burster.signalfile import load_signals
from burster.tfconfig import config_from_terraform
from tests.nvml import fake_pynvml

DOCS = Path(__file__).resolve().parents[1] / "docs" / "config.md"
ROW = re.compile(r"^\| `([a-z_]+\.[a-z_.*]+)` \| ([^|]*) \| (.*) \|$", re.MULTILINE)


def _doc_rows() -> dict[str, tuple[str, str]]:
    return {m.group(1): (m.group(2).strip(), m.group(3)) for m in ROW.finditer(DOCS.read_text())}


def _doc_default(text: str) -> Any:
    text = text.strip("`")
    if text == "none":
        return None
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # an unquoted string such as sqlite:///burster.db


def test_every_key_and_default_in_docs_config_md_is_the_code_s() -> None:
    rows, code = _doc_rows(), BursterConfig().model_dump(mode="json")
    keys = {f"{s}.{k}" for s, section in code.items() if s != "clouds" for k in section}
    assert keys == {k for k in rows if not k.startswith("clouds.")}
    for key in sorted(keys):
        section, name = key.split(".")
        assert _doc_default(rows[key][0]) == code[section][name], key
    for cloud, fields in code["clouds"].items():  # "enabled, regions, ..." in the order of the model
        assert rows[f"clouds.{cloud}.*"][1].startswith(f"`{', '.join(fields)}`")
        assert fields["enabled"] is False
    assert code["clouds"]["aws"]["regions"] == ["us-east-1"]
    assert '(default `["us-east-1"]`)' in (DOCS.parent / "providers" / "aws.md").read_text()


# key, lowest, highest (None: no bound), lowest excluded, whole numbers only
RANGES = [
    ("pool.nodes", 0, 100_000, False, True), ("pool.gpus_per_node", 1, 64, False, True),
    ("cost.onprem_usd_per_gpu_hour", 0, 100, False, False), ("cost.restart_overhead_s", 0, 86_400, False, False),
    ("cost.wait_value_usd_per_gpu_hour", 0, 1000, False, False), ("cost.deadline_miss_usd", 0, None, False, False),
    ("cost.spot_interruptions_per_hour", 0, 10, False, False), ("cost.launch_latency_s", 0, 3600, False, False),
    ("cost.launch_latency_sigma", 0, 2, False, False), ("cost.checkpoint_write_s", 0, 3600, False, False),
    ("cost.interruption_notice_s.gcp", 0, 3600, False, False), ("policy.idle_ttl_s", 0, 86_400, False, False),
    ("policy.join_timeout_s", 60, 86_400, False, False), ("policy.max_wait_s", 0, 604_800, False, False),
    ("policy.deadline_margin_s", 0, 86_400, False, False), ("policy.defer_margin_s", 0, 86_400, False, False),
    ("policy.defer_quantile", 0, 1, False, False), ("policy.market_quantile", 0, 1, False, False),
    ("policy.standby_window_s", 60, 86_400, False, False), ("budget.total_usd", 0, None, False, False),
    ("budget.team_usd.vision", 0, None, False, False), ("budget.soft_fraction", 0, 1, True, False),
    ("guards.max_nodes", 0, 100_000, False, True), ("guards.max_launches_per_minute", 0, 10_000, False, True),
    ("controller.tick_s", 0, 3600, True, False),
]


# keys a rule across sections ties to another (join timeout > boot): that other is set out of the way
COMPANIONS: dict[str, dict[str, Any]] = {"policy.join_timeout_s": {"cost": {"launch_latency_s": 0}},
                                         "cost.launch_latency_s": {"policy": {"join_timeout_s": 86_400}}}


def _data(key: str, value: object) -> dict[str, Any]:
    *path, last = key.split(".")
    data: dict[str, Any] = {k: dict(v) for k, v in COMPANIONS.get(key, {}).items()}
    node = data
    for part in path:
        node = node.setdefault(part, {})
    node[last] = value
    return data


def _get(config: BursterConfig, key: str) -> Any:
    value: Any = config
    for part in key.split("."):
        value = value[part] if isinstance(value, dict) else getattr(value, part)
    return value


def _refused(key: str, value: object, bound: float) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(_data(key, value))
    line = next(x for x in str(info.value).splitlines() if x.strip().startswith(f"{key}:"))
    assert f" {bound:g}" in line and f"(got {value!r})" in line


@pytest.mark.parametrize(("key", "low", "high", "open_low", "whole"), RANGES, ids=[r[0] for r in RANGES])
def test_each_documented_range_is_enforced_at_its_bounds_naming_key_and_bound(
        key: str, low: float, high: float | None, open_low: bool, whole: bool) -> None:
    step = 1 if whole else 0.001
    inside = [low + step] if open_low else [low]
    if high is not None:
        inside.append(high)
    for value in inside:
        assert _get(parse_config(_data(key, value)), key) == value
    _refused(key, low if open_low else low - step, low)
    if high is not None:
        _refused(key, high + step, high)
    doc = _doc_rows()[key.rsplit(".", 1)[0] if key.count(".") == 2 else key][1]
    shown = f"({low:g}, {high:g}]" if open_low else f"{low:g}..{high:g}" if high is not None else f">= {low:g}"
    assert shown in doc, f"docs/config.md does not give {key} the range {shown}"


@pytest.mark.parametrize(("key", "longest"), [("pool.gpu_model", 64), ("controller.cluster", 63)])
def test_names_have_a_length_limit_and_a_cluster_name_cannot_start_with_a_dash(key: str, longest: int) -> None:
    assert _get(parse_config(_data(key, "a" * longest)), key) == "a" * longest
    with pytest.raises(ConfigError, match=rf"{key}: String should have at most {longest} characters"):
        parse_config(_data(key, "a" * (longest + 1)))
    with pytest.raises(ConfigError, match=r"controller\.cluster: String should match pattern"):
        parse_config({"controller": {"cluster": "-edge"}})


def test_an_infinite_deadline_penalty_is_refused_it_made_expected_costs_nan() -> None:
    """0 x inf is nan: a spot run with no exposure to a miss was priced nan, and every comparison with it false."""
    with pytest.raises(ConfigError, match=r"cost.deadline_miss_usd: Input should be a finite number"):
        parse_config({"cost": {"deadline_miss_usd": float("inf")}})
    assert cost_model(parse_config({"cost": {"deadline_miss_usd": 1e9}})).p.deadline_miss_usd == 1e9


@pytest.mark.parametrize("password", ["MyPw S3cretQ", "S3cr'etPW Xy9q", 'S3cQ"retPW'])
def test_no_part_of_a_password_is_echoed_from_a_config_value(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              password: str) -> None:
    """A quote or a space in the password used to end the mask there: 'burster:MyPw ***@db' showed 'MyPw'."""
    url = f"postgresql+psycopg2://burster:{password}@db.example:5432/burster"
    path = tmp_path / "burster.toml"
    cluster = f"ops:{password}@db.example"
    path.write_text(f"[store]\nurl = [{json.dumps(url)}]\n[controller]\ncluster = {json.dumps(cluster)}\n")
    assert main(["simulate", "--demo", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "store.url: Input should be a valid string (got ['postgresql+psycopg2://***@db.example:5432/" in err
    assert "controller.cluster: String should match pattern" in err and "(got '***@db.example')" in err
    shown = err.replace(str(path), "")
    assert "ops:" not in shown and "burster:" not in shown.replace("burster: error", "")
    assert not any(part in shown for part in re.split(r"[ '\"]", password) if part)


def test_a_table_where_a_value_belongs_is_not_echoed_and_an_unknown_section_only_named(tmp_path: Path) -> None:
    """A token that is no URL cannot be masked: neither a table given for a string nor an unknown
    section (e.g. a [jira] token) is printed back."""
    path = tmp_path / "burster.toml"
    path.write_text('[store.url]\ntoken = "jira-T0KEN-abc"\n[jira]\napi_token = "jira-T0KEN-def"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    msg = str(info.value)
    assert "store.url: Input should be a valid string\n" in msg + "\n" and "jira: unknown key" in msg
    assert "T0KEN" not in msg


def test_masking_covers_a_fragment_and_a_url_without_a_scheme() -> None:
    assert redact_url("https://h/cb#access_token=s3cr3t") == redact("https://h/cb#access_token=s3cr3t") == "https://h/cb?***"
    assert redact_value(["ops:pa ss@h", {"k": "x://u:p'w@h"}]) == ["***@h", {"k": "x://***@h"}]


def test_config_files_with_a_bom_load_and_unreadable_paths_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bom.toml"
    path.write_bytes("\ufeff[pool]\nnodes = 3\n".encode())
    assert load_config(path).pool.nodes == 3
    long = tmp_path / ("x" * 300 + ".toml")  # ENAMETOOLONG: an OSError that is no missing file or folder
    with pytest.raises(ConfigError, match=r"cannot read config file .*: File name too long"):
        load_config(long)
    with pytest.raises(ValueError, match="frozen"):
        load_config(path).pool.nodes = 4  # type: ignore[misc]


def test_an_unknown_policy_name_given_to_the_wiring_lists_the_valid_ones() -> None:
    config = BursterConfig()
    with pytest.raises(ConfigError, match="unknown policy 'yolo'; valid: burster, reserved-only, on-demand"):
        build_policy("yolo", config, cost_model(config))


def test_a_null_inside_a_cloud_named_output_is_left_out_and_a_bad_value_is_masked() -> None:
    text = '{"aws": {"value": {"regions": ["us-west-2"], "endpoint_url": null}}}'
    assert config_from_terraform([("aws.json", text)]) == '[clouds.aws]\nenabled = true\nregions = ["us-west-2"]\n'
    bad = '{"endpoint_url": {"value": ["https://u:my pw@proxy.example"]}}'
    with pytest.raises(ConfigError) as info:
        config_from_terraform([("aws.json", bad)])
    assert "clouds.aws.endpoint_url" in str(info.value) and "my" not in str(info.value)


HEADER = "source,gpu_hours,window_start,window_end,announced_at\n"


@pytest.mark.parametrize(("row", "column"), [
    ("S-1,5,2026-01-05T09:00:00,2026-01-05T09:00:00,", "window_end"),  # an empty window
    ("S-1,5,2026-01-05T09:00:00,2026-01-05T10:00:00,2026-01-05T10:00:00", "announced_at"),  # seen as it ends
])
def test_a_signal_whose_window_is_empty_or_announced_as_it_ends_is_refused(tmp_path: Path, row: str,
                                                                           column: str) -> None:
    path = tmp_path / "signals.csv"
    path.write_text(HEADER + row + "\n")
    with pytest.raises(InputError, match=rf"row 2, column '{column}'"):
        load_signals(path)


@pytest.fixture
def nvml(monkeypatch: pytest.MonkeyPatch) -> Any:
    mod = fake_pynvml.make()
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    return mod


@pytest.mark.parametrize("argv", [["--timeout", "0"], ["--interval", "86401"]])
def test_agent_seconds_outside_their_range_are_refused(nvml: Any, capsys: pytest.CaptureFixture[str],
                                                       argv: list[str]) -> None:
    assert main(["agent", "--once", *argv]) == 2
    assert "--interval and --timeout must be seconds in (0, 86400]" in capsys.readouterr().err
    assert nvml.calls == []


def test_a_counted_agent_does_not_sleep_after_its_last_report() -> None:
    sleeps: list[float] = []
    sent: list[dict[str, Any]] = []
    run_agent(lambda: (), sent.append, count=2, interval_s=30.0, sleep=sleeps.append)
    assert len(sent) == 2 and sleeps == [30.0]


def test_agent_without_the_nvml_package_exits_3_saying_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    assert main(["agent", "--once"]) == 3
    out = capsys.readouterr()
    assert out.out == "" and out.err == ("burster: error: the nvidia-ml-py package is not installed; "
                                         "pip install nvidia-ml-py\n")


def test_agent_names_a_failing_gpu_count_and_reports_gpus_without_process_queries(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    mod = fake_pynvml.make()

    def unsupported(_handle: object) -> None:
        raise mod.NVMLError_NotSupported()
    mod.nvmlDeviceGetComputeRunningProcesses = unsupported
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    assert main(["agent", "--once"]) == 0
    assert '"processes": []' in capsys.readouterr().out

    def lost() -> int:
        raise mod.NVMLError_Unknown()
    mod.nvmlDeviceGetCount = lost
    assert main(["agent", "--once"]) == 2
    assert "NVML failed reading the GPU count: NVMLError_Unknown" in capsys.readouterr().err
    assert mod.calls[-2:] == ["init", "shutdown"]


def test_offerings_refuses_a_negative_limit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["offerings", "--limit", "-1", "--json"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "--limit must be 0 (all) or more, got -1" in out.err


def test_the_replay_window_is_checked_at_both_ends_of_its_documented_range() -> None:
    check_window(365.0, 3650.0)
    check_window(None, 0.0)
    for days, start_day, flag in [(0.0, 0.0, "--days"), (365.001, 0.0, "--days"), (None, -0.001, "--start-day"),
                                  (None, 3650.001, "--start-day")]:
        with pytest.raises(ConfigError, match=rf"^{flag} must be in "):
            check_window(days, start_day)
