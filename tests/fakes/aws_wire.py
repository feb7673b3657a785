"""EC2 Query API answers rewritten as EC2 would give them where moto does not (for the fault proxy,
aws_proxy.py): a fleet short of capacity, a spot instance's take-back reason, and pages of
DescribeLaunchTemplateVersions (moto returns every version at once)."""

from __future__ import annotations

import uuid
from urllib.parse import urlencode
from xml.etree import ElementTree as ET

EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15/"
CAPACITY_MESSAGE = (
    "We currently do not have sufficient {itype} capacity in the Availability Zone you requested. "
    "Our system will be working on provisioning additional capacity. You can currently get {itype} "
    "capacity by not specifying an Availability Zone in your request or choosing a different one.")


def ask_for(params: dict[str, str], fulfilled: int) -> bytes:
    changed = dict(params)
    for key in ("TotalTargetCapacity", "SpotTargetCapacity", "OnDemandTargetCapacity"):
        full = f"TargetCapacitySpecification.{key}"
        if full in changed:
            changed[full] = str(fulfilled)
    return urlencode(changed).encode()


def _error_item(params: dict[str, str]) -> ET.Element:
    spot = params.get("TargetCapacitySpecification.DefaultTargetCapacityType") == "spot"
    itype = params.get("LaunchTemplateConfigs.1.Overrides.1.InstanceType", "")
    item = ET.Element(f"{{{EC2_NS}}}item")
    lto = ET.SubElement(item, f"{{{EC2_NS}}}launchTemplateAndOverrides")
    spec = ET.SubElement(lto, f"{{{EC2_NS}}}launchTemplateSpecification")
    ET.SubElement(spec, f"{{{EC2_NS}}}launchTemplateId").text = params.get(
        "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId", "")
    ET.SubElement(spec, f"{{{EC2_NS}}}version").text = params.get(
        "LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version", "")
    over = ET.SubElement(lto, f"{{{EC2_NS}}}overrides")
    ET.SubElement(over, f"{{{EC2_NS}}}instanceType").text = itype
    for field, tag in (("SubnetId", "subnetId"), ("AvailabilityZone", "availabilityZone")):
        value = params.get(f"LaunchTemplateConfigs.1.Overrides.1.{field}")
        if value:
            ET.SubElement(over, f"{{{EC2_NS}}}{tag}").text = value
    ET.SubElement(item, f"{{{EC2_NS}}}lifecycle").text = "spot" if spot else "on-demand"
    ET.SubElement(item, f"{{{EC2_NS}}}errorCode").text = "InsufficientInstanceCapacity"
    ET.SubElement(item, f"{{{EC2_NS}}}errorMessage").text = CAPACITY_MESSAGE.format(itype=itype)
    return item


def capacity_response(params: dict[str, str]) -> bytes:
    ET.register_namespace("", EC2_NS)
    root = ET.Element(f"{{{EC2_NS}}}CreateFleetResponse")
    ET.SubElement(root, f"{{{EC2_NS}}}requestId").text = str(uuid.uuid4())
    ET.SubElement(root, f"{{{EC2_NS}}}fleetId").text = f"fleet-{uuid.uuid4()}"
    ET.SubElement(root, f"{{{EC2_NS}}}errorSet").append(_error_item(params))
    ET.SubElement(root, f"{{{EC2_NS}}}fleetInstanceSet")
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root)


def add_error_item(data: bytes, params: dict[str, str]) -> bytes:
    ET.register_namespace("", EC2_NS)
    root = ET.fromstring(data)
    ns = root.tag.split("}")[0] + "}" if root.tag.startswith("{") else ""
    errors = root.find(f"{ns}errorSet")
    if errors is None:
        errors = ET.SubElement(root, f"{ns}errorSet")
    item = _error_item(params)
    for el in item.iter():  # moto's namespace may lack the trailing slash; follow the document's
        el.tag = ns + el.tag.split("}", 1)[1]
    errors.append(item)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root)


def spot_reason(data: bytes, instance_ids: set[str]) -> bytes:
    """DescribeInstances' answer with these instances' stateReason set to EC2's spot take-back."""
    ET.register_namespace("", EC2_NS)
    root = ET.fromstring(data)
    ns = root.tag.split("}")[0] + "}" if root.tag.startswith("{") else ""
    for item in root.iter(f"{ns}item"):
        if item.findtext(f"{ns}instanceId") in instance_ids and (reason := item.find(f"{ns}stateReason")) is not None:
            for tag, text in (("code", "Server.SpotInstanceTermination"), ("message", "Server.SpotInstanceTermination: "
                                                                           "Spot instance termination")):
                el = reason.find(f"{ns}{tag}")
                if el is None:
                    el = ET.SubElement(reason, f"{ns}{tag}")
                el.text = text
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root)


def unpaged(params: dict[str, str]) -> bytes:
    """A DescribeLaunchTemplateVersions request without ``MaxResults`` and ``NextToken``, for moto to
    answer with every version (``page_of`` cuts the page)."""
    return urlencode({k: v for k, v in params.items() if k not in ("MaxResults", "NextToken")}).encode()


def page_of(data: bytes, params: dict[str, str], size: int) -> bytes:
    """moto's whole DescribeLaunchTemplateVersions answer cut to one page of at most ``size`` versions
    (and ``MaxResults``) from ``NextToken`` on, with the ``nextToken`` of the next page, as EC2 pages."""
    ET.register_namespace("", EC2_NS)
    root = ET.fromstring(data)
    ns = root.tag.split("}")[0] + "}" if root.tag.startswith("{") else ""
    versions = root.find(f"{ns}launchTemplateVersionSet")
    if versions is None:
        return data
    items = list(versions)
    first = int(params.get("NextToken") or 0)
    last = first + min(size, int(params.get("MaxResults") or size))
    for item in items[:first] + items[last:]:
        versions.remove(item)
    if last < len(items):
        ET.SubElement(root, f"{ns}nextToken").text = str(last)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root)
