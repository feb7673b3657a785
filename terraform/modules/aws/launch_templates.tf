# One launch template per GPU class. IMDSv2 is required, the root volume is encrypted and nodes get
# no public IP unless associate_public_ip_address says so. The user data is a placeholder: the
# controller supplies the node bootstrap when it launches an instance.

data "aws_ami" "gpu" {
  for_each = var.gpu_classes

  filter {
    name   = "image-id"
    values = [each.value.ami_id]
  }
}

resource "aws_launch_template" "gpu" {
  for_each = var.gpu_classes

  name                   = "${local.name_base}-${each.key}"
  description            = "Burster ${each.key} GPU node for cluster ${var.cluster}"
  image_id               = each.value.ami_id
  instance_type          = each.value.instance_type
  ebs_optimized          = true
  update_default_version = true
  # a guest `shutdown -h` ends the node instead of leaving it stopped, its volumes billed
  instance_initiated_shutdown_behavior = "terminate"
  user_data                            = base64encode(var.user_data_placeholder)

  iam_instance_profile {
    arn = aws_iam_instance_profile.node.arn
  }

  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = var.metadata_hop_limit
  }

  network_interfaces {
    device_index                = 0
    associate_public_ip_address = var.associate_public_ip_address
    security_groups             = [aws_security_group.node.id]
    delete_on_termination       = true
  }

  block_device_mappings {
    device_name = data.aws_ami.gpu[each.key].root_device_name

    ebs {
      volume_size           = each.value.root_volume_size_gb
      volume_type           = "gp3"
      encrypted             = true
      kms_key_id            = var.ebs_kms_key_arn
      delete_on_termination = true
    }
  }

  dynamic "tag_specifications" {
    for_each = toset(["instance", "volume", "network-interface"])
    content {
      resource_type = tag_specifications.value
      tags          = merge(local.tags, { "burster-gpu-class" = each.key })
    }
  }

  tags = merge(local.tags, { "burster-gpu-class" = each.key })
}
