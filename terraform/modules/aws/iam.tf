# Controller role: least privilege for launching, tagging, terminating and watching Burster nodes.
# Describe*, pricing and spot-price reads have no resource-level permissions in AWS, so they are
# scoped by region (aws:RequestedRegion) instead; every mutating action is scoped by ARN and tag.

data "aws_partition" "current" {}
data "aws_caller_identity" "current" {}
data "aws_region" "current" {}

locals {
  # names: "<prefix>-<cluster>", cut to 30 characters with a hash of the cluster when longer, so every
  # name built on it stays within AWS's limits (IAM roles and EventBridge rules: 64, SQS queues: 80)
  name_full    = "${var.name_prefix}-${var.cluster}"
  name_base    = length(local.name_full) <= 30 ? local.name_full : "${trim(substr(local.name_full, 0, 25), "-")}-${substr(sha1(var.cluster), 0, 4)}"
  managed_tags = { "managed-by" = "burster", "burster-cluster" = var.cluster }
  tags         = merge(var.tags, local.managed_tags)
  region       = data.aws_region.current.name
  ec2_arn      = "arn:${data.aws_partition.current.partition}:ec2:${local.region}:${data.aws_caller_identity.current.account_id}"
  kms_key_arns = compact([var.ebs_kms_key_arn, var.sqs_kms_key_arn])
}

data "aws_iam_policy_document" "controller_trust" {
  statement {
    sid     = "AssumeFromController"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "AWS"
      identifiers = var.controller_principal_arns
    }
  }
}

data "aws_iam_policy_document" "controller" {
  statement {
    sid       = "LaunchOnlyTaggedInstances"
    actions   = ["ec2:RunInstances", "ec2:CreateFleet"]
    resources = ["${local.ec2_arn}:instance/*", "${local.ec2_arn}:fleet/*"]

    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/managed-by"
      values   = ["burster"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/burster-cluster"
      values   = [var.cluster]
    }
  }

  statement {
    sid     = "LaunchFromOwnTemplatesSubnetsAndGroup"
    actions = ["ec2:RunInstances", "ec2:CreateFleet"]
    resources = concat(
      [for lt in aws_launch_template.gpu : lt.arn],
      [for s in var.subnet_ids : "${local.ec2_arn}:subnet/${s}"],
      [
        aws_security_group.node.arn,
        "${local.ec2_arn}:volume/*",
        "${local.ec2_arn}:network-interface/*",
        "${local.ec2_arn}:spot-instances-request/*",
        "arn:${data.aws_partition.current.partition}:ec2:${local.region}::image/*",
      ],
    )
  }

  statement {
    sid       = "WriteBootstrapVersionsOfOwnTemplates"
    actions   = ["ec2:CreateLaunchTemplateVersion"]
    resources = [for lt in aws_launch_template.gpu : lt.arn]
  }

  statement {
    sid     = "TagOnlyOnCreate"
    actions = ["ec2:CreateTags"]
    resources = [
      "${local.ec2_arn}:instance/*",
      "${local.ec2_arn}:fleet/*",
      "${local.ec2_arn}:volume/*",
      "${local.ec2_arn}:network-interface/*",
      "${local.ec2_arn}:spot-instances-request/*",
    ]

    condition {
      test     = "StringEquals"
      variable = "ec2:CreateAction"
      values   = ["RunInstances", "CreateFleet"]
    }
  }

  statement {
    sid       = "TerminateOnlyOwnInstances"
    actions   = ["ec2:TerminateInstances"]
    resources = ["${local.ec2_arn}:instance/*"]

    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/managed-by"
      values   = ["burster"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/burster-cluster"
      values   = [var.cluster]
    }
  }

  statement {
    sid = "RegionalReads"
    actions = [
      "ec2:DescribeInstances",
      "ec2:DescribeSpotPriceHistory",
      "ec2:DescribeLaunchTemplateVersions",
      "ec2:DescribeAvailabilityZones",
      "ec2:DescribeSubnets",
    ]
    resources = ["*"]

    condition {
      test     = "StringEquals"
      variable = "aws:RequestedRegion"
      values   = [local.region]
    }
  }

  statement {
    sid       = "PriceListReads"
    actions   = ["pricing:GetProducts"]
    resources = ["*"]
  }

  statement {
    sid       = "ConsumeOwnInterruptionQueue"
    actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage"]
    resources = [aws_sqs_queue.interruptions.arn]
  }

  statement {
    sid       = "PassOnlyTheNodeRole"
    actions   = ["iam:PassRole"]
    resources = [aws_iam_role.node.arn]

    condition {
      test     = "StringEquals"
      variable = "iam:PassedToService"
      values   = ["ec2.amazonaws.com"]
    }
  }

  dynamic "statement" {
    for_each = length(local.kms_key_arns) > 0 ? [1] : []
    content {
      sid       = "UseOwnKmsKeys"
      actions   = ["kms:Decrypt", "kms:GenerateDataKeyWithoutPlaintext", "kms:CreateGrant"]
      resources = local.kms_key_arns

      condition {
        test     = "StringEquals"
        variable = "kms:ViaService"
        values   = ["ec2.${local.region}.amazonaws.com", "sqs.${local.region}.amazonaws.com"]
      }
    }
  }
}

resource "aws_iam_role" "controller" {
  name               = "${local.name_base}-controller"
  description        = "Burster controller for cluster ${var.cluster}: launches, tags and terminates burst GPU nodes."
  assume_role_policy = data.aws_iam_policy_document.controller_trust.json
  tags               = local.tags
}

resource "aws_iam_policy" "controller" {
  name        = "${local.name_base}-controller"
  description = "Least-privilege policy of the Burster controller for cluster ${var.cluster}."
  policy      = data.aws_iam_policy_document.controller.json
  tags        = local.tags
}

resource "aws_iam_role_policy_attachment" "controller" {
  role       = aws_iam_role.controller.name
  policy_arn = aws_iam_policy.controller.arn
}

# Node role and instance profile: no permissions unless node_policy_arns adds some.
data "aws_iam_policy_document" "node_trust" {
  statement {
    sid     = "Ec2AssumesNodeRole"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "node" {
  name               = "${local.name_base}-node"
  description        = "Role of Burster GPU nodes for cluster ${var.cluster}."
  assume_role_policy = data.aws_iam_policy_document.node_trust.json
  tags               = local.tags
}

resource "aws_iam_role_policy_attachment" "node" {
  for_each   = toset(var.node_policy_arns)
  role       = aws_iam_role.node.name
  policy_arn = each.value
}

resource "aws_iam_instance_profile" "node" {
  name = "${local.name_base}-node"
  role = aws_iam_role.node.name
  tags = local.tags
}
