# Each output is named after its key under [clouds.aws] (cluster: under [controller]) in Burster's config file.

output "regions" {
  description = "clouds.aws.regions: the region these resources live in."
  value       = [local.region]
}

output "launch_template_ids" {
  description = "clouds.aws.launch_template_ids: GPU class to launch template ID."
  value       = { for k, lt in aws_launch_template.gpu : k => lt.id }
}

output "subnet_ids" {
  description = "clouds.aws.subnet_ids: subnets nodes may launch into."
  value       = var.subnet_ids
}

output "security_group_ids" {
  description = "clouds.aws.security_group_ids: the node security group."
  value       = [aws_security_group.node.id]
}

output "instance_profile_arn" {
  description = "clouds.aws.instance_profile_arn: the node instance profile."
  value       = aws_iam_instance_profile.node.arn
}

output "interruption_queue_url" {
  description = "clouds.aws.interruption_queue_url: the SQS queue of interruption and state-change events."
  value       = aws_sqs_queue.interruptions.url
}

output "cluster" {
  description = "controller.cluster: the cluster these resources serve; instances carry the tag burster-cluster = <cluster>."
  value       = var.cluster
}
