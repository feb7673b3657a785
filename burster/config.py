"""Configuration: one TOML file validated by pydantic. Unknown keys are errors (typos fail loudly).

Every section has defaults, so an empty file is a valid simulation config. Values are strict: a
number must be a number (``nodes = true`` or ``nodes = "4"`` is an error), a flag true or false.
Cloud sections hold identifiers (launch templates, subnets, projects), never secrets: credentials
come from each SDK's usual chain (environment, profile, managed identity). Error messages echo a bad
value with any URL password and query string masked.
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from burster.errors import ConfigError
from burster.model import Requeue
from burster.redact import redact_value

PROVIDERS = ("aws", "gcp", "azure")
# burster.app.POLICIES builds each (a test keeps the two the same)
POLICY_NAMES = ("burster", "reserved-only", "on-demand", "greedy-spot", "uniform-progress", "compute-wait")
DEFAULT_NOTICE_S = {"aws": 120.0, "gcp": 30.0, "azure": 30.0}
Names = Annotated[tuple[str, ...], Field(strict=False)]  # a TOML array (a list) of strings


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


MAX_POOL_NODES = 100_000


class PoolConfig(_Section):
    kind: Literal["sim"] = "sim"
    nodes: int = Field(default=16, ge=0, le=MAX_POOL_NODES)
    gpus_per_node: int = Field(default=8, ge=1, le=64)
    gpu_model: str = Field(default="V100", min_length=1, max_length=64)  # e.g. V100, A100-80GB
    requeue: Requeue = Field(default=Requeue.SUBMISSION, strict=False)  # given as its string value
    order: Literal["start_by", "submission"] = "start_by"


class CostConfig(_Section):
    onprem_usd_per_gpu_hour: float = Field(default=1.20, ge=0, le=100)
    restart_overhead_s: float = Field(default=300.0, ge=0, le=86_400)
    wait_value_usd_per_gpu_hour: float = Field(default=2.5, ge=0, le=1000)
    deadline_miss_usd: float = Field(default=500.0, ge=0, allow_inf_nan=False)  # inf: 0 x inf = nan $
    spot_interruptions_per_hour: float = Field(default=0.05, ge=0, le=10)
    launch_latency_s: float = Field(default=180.0, ge=0, le=3600)
    launch_latency_sigma: float = Field(default=0.25, ge=0, le=2)
    checkpoint_write_s: float = Field(default=60.0, ge=0, le=3600)
    interruption_notice_s: dict[str, Annotated[float, Field(ge=0, le=3600)]] = Field(
        default_factory=lambda: dict(DEFAULT_NOTICE_S))

    @field_validator("interruption_notice_s")
    @classmethod
    def _known_providers(cls, notice: dict[str, float]) -> dict[str, float]:
        """The providers given, over the defaults of those left out (not 0 s for them)."""
        unknown = sorted(set(notice) - set(PROVIDERS))
        if unknown:
            raise ValueError(f"unknown provider(s) {', '.join(unknown)}; valid: {', '.join(PROVIDERS)}")
        return {**DEFAULT_NOTICE_S, **notice}


class PolicyConfig(_Section):
    name: str = "burster"
    idle_ttl_s: float = Field(default=300.0, ge=0, le=86_400)
    join_timeout_s: float = Field(default=1200.0, ge=60, le=86_400)
    max_wait_s: float = Field(default=600.0, ge=0, le=7 * 86_400)
    deadline_margin_s: float = Field(default=900.0, ge=0, le=86_400)
    prewarm: bool = True
    reclaim_to_onprem: bool = True
    hold_nodes: bool = True
    consolidate: bool = True
    preempt_onprem: bool = True
    defer_to_budget: bool = True
    defer_margin_s: float = Field(default=120.0, ge=0, le=86_400)
    defer_quantile: float = Field(default=0.05, ge=0, le=1)
    market_quantile: float = Field(default=0.9, ge=0, le=1)
    price_late: bool = True
    correct_estimates: bool = True
    exclusive_nodes: bool = True
    risk_switch: bool = True
    standby: bool = False
    standby_window_s: float = Field(default=900.0, ge=60, le=86_400)

    @field_validator("name")
    @classmethod
    def _known_policy(cls, name: str) -> str:
        if name not in POLICY_NAMES:
            raise ValueError(f"unknown policy; valid: {', '.join(POLICY_NAMES)}")
        return name


class BudgetConfig(_Section):
    total_usd: float | None = Field(default=None, ge=0)
    team_usd: dict[str, Annotated[float, Field(ge=0)]] = Field(default_factory=dict)
    soft_fraction: float = Field(default=0.8, gt=0, le=1)
    period: Literal["month", "week", "day", "all"] = "month"


class GuardConfig(_Section):
    max_nodes: int = Field(default=256, ge=0, le=100_000)
    max_launches_per_minute: int = Field(default=60, ge=0, le=10_000)
    protected_node_ids: Names = ()


CLUSTER_PATTERN = r"^[a-z0-9][a-z0-9-]*$"  # a tag value every cloud takes (GCE labels: lowercase)


class _CloudSection(_Section):
    enabled: bool = False
    # the cluster its terraform module was applied with (its nodes' tag and its permissions' scope):
    # if given, it must be controller.cluster; ``burster config from-terraform`` writes it
    cluster: str = Field(default="", max_length=63, pattern=r"^([a-z0-9][a-z0-9-]*)?$")


class AwsConfig(_CloudSection):
    regions: Names = ("us-east-1",)
    launch_template_ids: dict[str, str] = Field(default_factory=dict)  # gpu class -> lt id
    subnet_ids: Names = ()
    security_group_ids: Names = ()
    instance_profile_arn: str = ""
    interruption_queue_url: str = ""
    endpoint_url: str = ""  # one endpoint for EC2, SQS and Price List (moto); per service: AWS_ENDPOINT_URL_EC2 etc.


class GcpConfig(_CloudSection):
    project: str = ""
    zones: Names = ()
    instance_templates: dict[str, str] = Field(default_factory=dict)  # gpu class -> template URL
    node_service_account: str = ""
    network: str = ""
    subnetwork: str = ""
    api_endpoint: str = ""


class AzureConfig(_CloudSection):
    subscription_id: str = ""
    resource_group: str = ""
    location: str = ""
    subnet_id: str = ""
    identity_id: str = ""
    image_reference: dict[str, str] = Field(default_factory=dict)
    base_url: str = ""


class CloudsConfig(_Section):
    aws: AwsConfig = AwsConfig()
    gcp: GcpConfig = GcpConfig()
    azure: AzureConfig = AzureConfig()


class StoreConfig(_Section):
    url: str = "sqlite:///burster.db"


class ControllerConfig(_Section):
    cluster: str = Field(default="default", min_length=1, max_length=63, pattern=CLUSTER_PATTERN)
    tick_s: float = Field(default=10.0, gt=0, le=3600)


class BursterConfig(_Section):
    pool: PoolConfig = PoolConfig()
    cost: CostConfig = CostConfig()
    policy: PolicyConfig = PolicyConfig()
    budget: BudgetConfig = BudgetConfig()
    guards: GuardConfig = GuardConfig()
    clouds: CloudsConfig = CloudsConfig()
    store: StoreConfig = StoreConfig()
    controller: ControllerConfig = ControllerConfig()

    @model_validator(mode="after")
    def _join_outlasts_boot(self) -> BursterConfig:
        join_s, boot_s = self.policy.join_timeout_s, self.cost.launch_latency_s
        if join_s <= boot_s:
            raise ValueError(f"policy.join_timeout_s: {join_s:g} s is not longer than cost.launch_latency_s "
                             f"({boot_s:g} s, a node's modelled boot and join): every burst node would be "
                             "terminated before it joined; raise the timeout above the boot")
        return self

    @model_validator(mode="after")
    def _one_cluster(self) -> BursterConfig:
        ours = self.controller.cluster
        for name in ("aws", "gcp", "azure"):
            section = getattr(self.clouds, name)
            theirs = section.cluster
            if section.enabled and theirs and theirs != ours:  # (a disabled cloud launches nothing)
                raise ValueError(f"clouds.{name}.cluster: its terraform was applied for cluster {theirs!r}, which its "
                                 f"nodes' tags and permissions are scoped to, but controller.cluster is {ours!r}: "
                                 f"set [controller] cluster = \"{theirs}\" (or apply the module with {ours!r})")
        return self


def _describe(err: ValidationError, source: str, hidden: Collection[tuple[str, ...]] = ()) -> str:
    lines = [f"invalid configuration in {source}:"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"])
        if not key:  # a rule across sections: its message names the keys
            lines.append(f"  {e['msg'].removeprefix('Value error, ')}")
            continue
        got = e.get("input")
        secret = any(tuple(str(p) for p in e["loc"][:len(h)]) == h for h in hidden)
        shown = "" if isinstance(got, dict) or secret else f" (got {redact_value(got)!r})"
        if e["type"] == "extra_forbidden":
            lines.append(f"  {key}: unknown key; check its spelling against docs/config.md")
        else:
            lines.append(f"  {key}: {e['msg'].removeprefix('Value error, ')}{shown}")
    return "\n".join(lines)


def parse_config(data: dict[str, Any], source: str = "<config>",
                 hidden: Collection[tuple[str, ...]] = ()) -> BursterConfig:
    """Validate a config mapping; raise ConfigError naming each bad key and its allowed range.

    A bad value is echoed (URL credentials masked) unless its key is under a ``hidden`` path
    (``("clouds", "aws")``: a sensitive Terraform output).
    """
    try:
        return BursterConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_describe(err, source, hidden)) from None


def load_config(path: Path | None) -> BursterConfig:
    """Load a TOML config file; ``None`` gives the defaults."""
    if path is None:
        return BursterConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path} is a folder; give the path of a TOML file") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"config file {path} is not UTF-8 text (bad byte at offset {err.start}); "
                          "save it as UTF-8") from None
    except OSError as err:
        raise ConfigError(f"cannot read config file {path}: {err.strerror or err}") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"config file {path} is not valid TOML: {err}") from None
    return parse_config(data, str(path))
