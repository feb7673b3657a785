# SQS queue fed by EventBridge with Spot interruption warnings, rebalance recommendations and
# instance state changes; only the controller reads it (see the ConsumeOwnInterruptionQueue statement).

locals {
  interruption_events = {
    spot-interruption = "EC2 Spot Instance Interruption Warning"
    rebalance         = "EC2 Instance Rebalance Recommendation"
    state-change      = "EC2 Instance State-change Notification"
  }
}

resource "aws_sqs_queue" "interruptions" {
  name                      = "${local.name_base}-interruptions"
  message_retention_seconds = 300
  receive_wait_time_seconds = 20
  sqs_managed_sse_enabled   = var.sqs_kms_key_arn == null ? true : null
  kms_master_key_id         = var.sqs_kms_key_arn
  tags                      = local.tags
}

data "aws_iam_policy_document" "interruptions" {
  statement {
    sid       = "EventBridgeSendsOwnRules"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.interruptions.arn]

    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }

    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [for r in aws_cloudwatch_event_rule.interruptions : r.arn]
    }
  }

  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["sqs:*"]
    resources = [aws_sqs_queue.interruptions.arn]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_sqs_queue_policy" "interruptions" {
  queue_url = aws_sqs_queue.interruptions.id
  policy    = data.aws_iam_policy_document.interruptions.json
}

resource "aws_cloudwatch_event_rule" "interruptions" {
  for_each = local.interruption_events

  name        = "${local.name_base}-${each.key}"
  description = "Burster: ${each.value} events to the interruption queue"
  event_pattern = jsonencode({
    source        = ["aws.ec2"]
    "detail-type" = [each.value]
  })
  tags = local.tags
}

resource "aws_cloudwatch_event_target" "interruptions" {
  for_each = local.interruption_events

  rule      = aws_cloudwatch_event_rule.interruptions[each.key].name
  target_id = "burster-interruption-queue"
  arn       = aws_sqs_queue.interruptions.arn
}
