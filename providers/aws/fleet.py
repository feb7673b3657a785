"""EC2 CreateFleet (type ``instant``) requests and results, and launch-template versions for user data.

CreateFleet takes no user data, so the pool's bootstrap goes into a launch-template *version*
derived from the configured template's default version (``SourceVersion``) that adds only
``UserData`` (plus the instance profile / security groups from config when the template lacks
them). Versions are found again by their description (``burster:<hash>:src<n>``), so a restarted
controller reuses them instead of creating new ones. The user data itself is never logged.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from burster.errors import ConfigError
from burster.model import Market, Offering

USER_DATA_MAX_BYTES = 16 * 1024
RESERVED_TAGS = ("managed-by", "burster-cluster", "burster-request-id")


def template_id_for(offering: Offering, template_ids: Mapping[str, str]) -> str:
    """The launch template of the offering's GPU class, else the ``default`` one."""
    for key in (offering.gpu_model, "default"):
        if template_ids.get(key):
            return template_ids[key]
    import difflib

    near = difflib.get_close_matches(offering.gpu_model, list(template_ids), n=3, cutoff=0.5)
    hint = f" (close: {', '.join(near)})" if near else ""
    raise ConfigError(
        f"clouds.aws.launch_template_ids has no entry for GPU class {offering.gpu_model!r} and no "
        f"'default'{hint}; add one (terraform output launch_template_ids) to launch {offering.key}")


def tags_for(cluster: str, request_id: str, labels: Mapping[str, str]) -> list[dict[str, str]]:
    """The instance/fleet tags: the labels, then the reserved burster tags (which always win)."""
    merged: dict[str, str] = {}
    for key, value in labels.items():
        if key.lower().startswith("aws:") or not 0 < len(key) <= 128 or len(str(value)) > 256:
            raise ConfigError(f"label {key[:40]!r} cannot be an EC2 tag (keys 1-128 chars, not 'aws:', "
                              f"values up to 256 chars)")
        merged[key] = str(value)
    merged.update({"managed-by": "burster", "burster-cluster": cluster, "burster-request-id": request_id})
    return [{"Key": k, "Value": v} for k, v in merged.items()]


def fleet_request(offering: Offering, count: int, *, request_id: str, template_id: str, version: str,
                  overrides: Sequence[dict[str, str]], tags: list[dict[str, str]]) -> dict[str, Any]:
    """CreateFleet parameters: one pool (type x zone), spot with price-capacity-optimized or on-demand."""
    spot = offering.market is Market.SPOT
    target: dict[str, Any] = {"TotalTargetCapacity": count,
                              "DefaultTargetCapacityType": "spot" if spot else "on-demand"}
    target["SpotTargetCapacity" if spot else "OnDemandTargetCapacity"] = count
    params: dict[str, Any] = {
        "Type": "instant",
        "ClientToken": request_id,
        "TargetCapacitySpecification": target,
        "LaunchTemplateConfigs": [{
            "LaunchTemplateSpecification": {"LaunchTemplateId": template_id, "Version": version},
            "Overrides": [{"InstanceType": offering.instance_type, **o} for o in overrides],
        }],
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tags},
                              {"ResourceType": "fleet", "Tags": tags}],
    }
    if spot:
        params["SpotOptions"] = {"AllocationStrategy": "price-capacity-optimized",
                                 "InstanceInterruptionBehavior": "terminate"}
    else:
        params["OnDemandOptions"] = {"AllocationStrategy": "lowest-price"}
    return params


@dataclass(frozen=True, slots=True)
class FleetResult:
    """What an instant fleet did: the instances it launched and the errors it met."""

    instance_ids: tuple[str, ...]
    errors: tuple[tuple[str, str], ...]  # (code, message)


def fleet_result(response: Mapping[str, Any]) -> FleetResult:
    ids = [i for inst in response.get("Instances", []) for i in inst.get("InstanceIds", [])]
    errors = [(str(e.get("ErrorCode", "Unknown")), str(e.get("ErrorMessage", "")))
              for e in response.get("Errors", [])]
    return FleetResult(tuple(dict.fromkeys(ids)), tuple(errors))


class TemplateVersions:
    """Finds or creates the launch-template version that carries a given user data."""

    def __init__(self, call: Callable[..., Any], *, instance_profile_arn: str = "",
                 security_group_ids: Sequence[str] = ()) -> None:
        self._call = call
        self._profile = instance_profile_arn
        self._groups = tuple(security_group_ids)
        self._cache: dict[tuple[str, int, str], str] = {}

    def version_for(self, ec2: Any, template_id: str, user_data: str) -> str:
        """Version number (as a string) of ``template_id`` whose UserData is ``user_data``."""
        raw = user_data.encode()
        if len(raw) > USER_DATA_MAX_BYTES:
            raise ConfigError(f"the pool's bootstrap user data is {len(raw)} bytes; EC2 allows "
                              f"{USER_DATA_MAX_BYTES}. Shorten it (fetch the rest from the node)")
        default = self._default_version(ec2, template_id)
        extra = self._extra_data(default.get("LaunchTemplateData", {}))
        digest = hashlib.sha256(raw + repr(sorted(extra.items())).encode()).hexdigest()[:20]
        source = int(default["VersionNumber"])
        key = (template_id, source, digest)
        if key not in self._cache:
            description = f"burster:{digest}:src{source}"
            found = self._find(ec2, template_id, description)
            self._cache[key] = found or self._create(ec2, template_id, source, description, raw, extra)
        return self._cache[key]

    def _default_version(self, ec2: Any, template_id: str) -> dict[str, Any]:
        page = self._call("ec2:DescribeLaunchTemplateVersions", lambda: ec2.describe_launch_template_versions(
            LaunchTemplateId=template_id, Versions=["$Default"]))
        versions = page.get("LaunchTemplateVersions", [])
        if not versions:
            raise ConfigError(f"launch template {template_id} has no default version; fix "
                              f"clouds.aws.launch_template_ids")
        return dict(versions[0])

    def _extra_data(self, source_data: Mapping[str, Any]) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self._profile and "IamInstanceProfile" not in source_data:
            extra["IamInstanceProfile"] = {"Arn": self._profile}
        if self._groups and not source_data.get("NetworkInterfaces") and not source_data.get(
                "SecurityGroupIds"):
            extra["SecurityGroupIds"] = list(self._groups)
        return extra

    def _find(self, ec2: Any, template_id: str, description: str) -> str | None:
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"LaunchTemplateId": template_id, "MaxResults": 200}
            if token:
                kwargs["NextToken"] = token
            page = self._call("ec2:DescribeLaunchTemplateVersions",
                              lambda kw=kwargs: ec2.describe_launch_template_versions(**kw))
            for v in page.get("LaunchTemplateVersions", []):
                if v.get("VersionDescription") == description:
                    return str(v["VersionNumber"])
            token = page.get("NextToken")
            if not token:
                return None

    def _create(self, ec2: Any, template_id: str, source: int, description: str, raw: bytes,
                extra: dict[str, Any]) -> str:
        data = {"UserData": base64.b64encode(raw).decode(), **extra}
        made = self._call("ec2:CreateLaunchTemplateVersion", lambda: ec2.create_launch_template_version(
            LaunchTemplateId=template_id, SourceVersion=str(source), VersionDescription=description,
            ClientToken=f"{template_id}-{description}"[:128], LaunchTemplateData=data))
        return str(made["LaunchTemplateVersion"]["VersionNumber"])
