"""Least-privilege and hardening facts of terraform/modules/aws, read with python-hcl2."""

from __future__ import annotations

from typing import Any

import pytest

from tests.terraform.hcl import as_list, module

MUTATING = {"ec2:RunInstances", "ec2:CreateFleet", "ec2:TerminateInstances", "ec2:CreateTags"}


@pytest.fixture(scope="module")
def aws() -> Any:
    return module("aws")


def _statements(doc: dict[str, Any]) -> list[dict[str, Any]]:
    found = list(as_list(doc.get("statement")))
    for dyn in as_list(doc.get("dynamic")):
        for content in as_list(dyn.get("statement", {}).get("content")):
            found.append(content)
    return found


def _by_sid(aws: Any) -> dict[str, dict[str, Any]]:
    return {s["sid"]: s for s in _statements(aws.data["aws_iam_policy_document"]["controller"])}


def _conditions(statement: dict[str, Any]) -> dict[str, list[str]]:
    return {c["variable"]: c["values"] for c in as_list(statement.get("condition"))}


def _resources(statement: dict[str, Any]) -> list[str]:
    res = statement.get("resources", [])
    return [res] if isinstance(res, str) else list(res)


def test_no_wildcard_action_and_no_star_resource_for_writes(aws: Any) -> None:
    for st in _statements(aws.data["aws_iam_policy_document"]["controller"]):
        actions = st["actions"]
        assert all("*" not in a for a in actions), st["sid"]
        resources = _resources(st)
        for expr in resources:
            assert '"*"' not in expr, st["sid"]  # no bare "*" hidden in a concat() expression
        if "*" in resources:
            # Only reads without resource-level permissions may use "*".
            assert all(a.split(":")[1].startswith(("Describe", "Get")) for a in actions), st["sid"]
            assert not MUTATING & set(actions)


def test_every_statement_allows(aws: Any) -> None:
    for st in _statements(aws.data["aws_iam_policy_document"]["controller"]):
        assert st.get("effect", "Allow") == "Allow"


def test_launch_requires_managed_by_tag(aws: Any) -> None:
    st = _by_sid(aws)["LaunchOnlyTaggedInstances"]
    assert set(st["actions"]) == {"ec2:RunInstances", "ec2:CreateFleet"}
    assert any(r.endswith(":instance/*") for r in st["resources"])
    cond = _conditions(st)
    assert cond["aws:RequestTag/managed-by"] == ["burster"]
    assert cond["aws:RequestTag/burster-cluster"] == ["${var.cluster}"]


def test_supporting_launch_resources_are_scoped(aws: Any) -> None:
    expr = _by_sid(aws)["LaunchFromOwnTemplatesSubnetsAndGroup"]["resources"]
    assert "aws_launch_template.gpu" in expr
    assert "subnet/${s}" in expr and "var.subnet_ids" in expr
    assert "aws_security_group.node.arn" in expr
    assert ":instance/" not in expr  # instances are only allowed with the tag condition


def test_terminate_requires_managed_by_tag(aws: Any) -> None:
    st = _by_sid(aws)["TerminateOnlyOwnInstances"]
    assert st["actions"] == ["ec2:TerminateInstances"]
    cond = _conditions(st)
    assert cond["aws:ResourceTag/managed-by"] == ["burster"]
    assert cond["aws:ResourceTag/burster-cluster"] == ["${var.cluster}"]
    terminating = [s for s in _by_sid(aws).values() if "ec2:TerminateInstances" in s["actions"]]
    assert terminating == [st]


def test_create_tags_only_on_create(aws: Any) -> None:
    tagging = [s for s in _by_sid(aws).values() if "ec2:CreateTags" in s["actions"]]
    assert len(tagging) == 1
    assert sorted(_conditions(tagging[0])["ec2:CreateAction"]) == ["CreateFleet", "RunInstances"]


def test_describe_scoped_by_region_and_reads_present(aws: Any) -> None:
    sids = _by_sid(aws)
    reads = sids["RegionalReads"]
    assert {"ec2:DescribeInstances", "ec2:DescribeSpotPriceHistory"} <= set(reads["actions"])
    assert _conditions(reads)["aws:RequestedRegion"] == ["${local.region}"]
    assert "pricing:GetProducts" in sids["PriceListReads"]["actions"]


def test_pass_role_only_node_role_to_ec2(aws: Any) -> None:
    passing = [s for s in _by_sid(aws).values() if any(a.startswith("iam:") for a in s["actions"])]
    assert len(passing) == 1
    st = passing[0]
    assert st["actions"] == ["iam:PassRole"]
    assert st["resources"] == ["${aws_iam_role.node.arn}"]
    assert _conditions(st)["iam:PassedToService"] == ["ec2.amazonaws.com"]


def test_sqs_receive_delete_on_own_queue_only(aws: Any) -> None:
    sqs = [s for s in _by_sid(aws).values() if any(a.startswith("sqs:") for a in s["actions"])]
    assert len(sqs) == 1
    assert set(sqs[0]["actions"]) == {"sqs:ReceiveMessage", "sqs:DeleteMessage"}
    assert sqs[0]["resources"] == ["${aws_sqs_queue.interruptions.arn}"]


def test_trust_policies_name_principals(aws: Any) -> None:
    docs = aws.data["aws_iam_policy_document"]
    principals = as_list(docs["controller_trust"]["statement"][0]["principals"])
    assert principals[0]["identifiers"] == "${var.controller_principal_arns}"
    validation = aws.variables["controller_principal_arns"]["validation"]
    assert "length(var.controller_principal_arns) > 0" in as_list(validation)[0]["condition"]
    node = as_list(docs["node_trust"]["statement"][0]["principals"])[0]
    assert node == {"type": "Service", "identifiers": ["ec2.amazonaws.com"]}
    assert aws.variables["node_policy_arns"]["default"] == []


def test_launch_template_hardening(aws: Any) -> None:
    lt = aws.resource("aws_launch_template", "gpu")
    assert lt["for_each"] == "${var.gpu_classes}"
    meta = as_list(lt["metadata_options"])[0]
    assert meta["http_tokens"] == "required"  # IMDSv2 only
    assert meta["http_endpoint"] == "enabled"
    assert aws.variables["metadata_hop_limit"]["default"] == 1
    ebs = as_list(as_list(lt["block_device_mappings"])[0]["ebs"])[0]
    assert ebs["encrypted"] is True
    nic = as_list(lt["network_interfaces"])[0]
    assert nic["associate_public_ip_address"] == "${var.associate_public_ip_address}"
    assert aws.variables["associate_public_ip_address"]["default"] is False
    assert nic["security_groups"] == ["${aws_security_group.node.id}"]
    assert lt["user_data"] == "${base64encode(var.user_data_placeholder)}"
    assert "Placeholder" in aws.variables["user_data_placeholder"]["default"]
    assert as_list(lt["iam_instance_profile"])[0]["arn"] == "${aws_iam_instance_profile.node.arn}"
    assert lt["instance_initiated_shutdown_behavior"] == "terminate"  # a guest shutdown must not leave it stopped


def test_launch_template_tags_instances(aws: Any) -> None:
    lt = aws.resource("aws_launch_template", "gpu")
    spec = as_list(lt["dynamic"])[0]["tag_specifications"]
    assert "instance" in spec["for_each"] and "volume" in spec["for_each"]
    assert aws.locals["managed_tags"] == {"managed-by": "burster", "burster-cluster": "${var.cluster}"}


def test_spot_support(aws: Any) -> None:
    sids = _by_sid(aws)
    assert "ec2:DescribeSpotPriceHistory" in sids["RegionalReads"]["actions"]
    assert "spot-instances-request/*" in sids["LaunchFromOwnTemplatesSubnetsAndGroup"]["resources"]
    events = aws.locals["interruption_events"]
    assert set(events.values()) == {
        "EC2 Spot Instance Interruption Warning",
        "EC2 Instance Rebalance Recommendation",
        "EC2 Instance State-change Notification",
    }


def test_interruption_queue_and_rules(aws: Any) -> None:
    queue = aws.resource("aws_sqs_queue", "interruptions")
    assert "sqs_managed_sse_enabled" in queue and "kms_master_key_id" in queue
    rule = aws.resource("aws_cloudwatch_event_rule", "interruptions")
    assert rule["for_each"] == "${local.interruption_events}"
    assert "aws.ec2" in rule["event_pattern"]
    target = aws.resource("aws_cloudwatch_event_target", "interruptions")
    assert target["arn"] == "${aws_sqs_queue.interruptions.arn}"
    policy = {s["sid"]: s for s in as_list(aws.data["aws_iam_policy_document"]["interruptions"]["statement"])}
    send = policy["EventBridgeSendsOwnRules"]
    assert send["actions"] == ["sqs:SendMessage"]
    assert as_list(send["principals"])[0]["identifiers"] == ["events.amazonaws.com"]
    assert _conditions(send)["aws:SourceArn"]
    assert policy["DenyInsecureTransport"]["effect"] == "Deny"


def test_security_group_has_no_open_ingress(aws: Any) -> None:
    ingress = aws.resources["aws_vpc_security_group_ingress_rule"]
    for rule in ingress.values():
        assert "0.0.0.0/0" not in str(rule)
        assert rule["description"]
    assert aws.variables["onprem_cidr_blocks"]["default"] == []
    assert aws.variables["egress_tcp_ports"]["default"] == [80, 443]


def test_controller_may_write_bootstrap_versions_of_its_own_templates_only(aws: Any) -> None:
    """The AWS adapter puts the pool's user data in a new launch template version (CreateFleet takes
    no user data), so the controller needs CreateLaunchTemplateVersion, on its own templates only."""
    st = _by_sid(aws)["WriteBootstrapVersionsOfOwnTemplates"]
    assert st["actions"] == ["ec2:CreateLaunchTemplateVersion"]
    assert "aws_launch_template.gpu" in str(_resources(st)) and "*" not in str(_resources(st))
