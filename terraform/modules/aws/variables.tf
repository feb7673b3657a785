variable "cluster" {
  description = "Burster cluster name (controller.cluster); instances carry the tag burster-cluster = <cluster>."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{0,62}$", var.cluster))
    error_message = "cluster must match ^[a-z0-9][a-z0-9-]*$ and be at most 63 characters, like controller.cluster."
  }
}

variable "name_prefix" {
  description = "Prefix of every resource name this module creates."
  type        = string
  default     = "burster"
}

variable "vpc_id" {
  description = "VPC that holds the subnets the GPU nodes launch into."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets the controller may launch nodes into (clouds.aws.subnet_ids)."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) > 0
    error_message = "subnet_ids needs at least one subnet."
  }
}

variable "controller_principal_arns" {
  description = "IAM principals (role or user ARNs) allowed to assume the controller role."
  type        = list(string)

  validation {
    condition     = length(var.controller_principal_arns) > 0 && alltrue([for a in var.controller_principal_arns : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:", a))])
    error_message = "controller_principal_arns needs at least one IAM ARN; '*' is not allowed."
  }
}

variable "gpu_classes" {
  description = "One launch template per GPU class: the class name is the key of clouds.aws.launch_template_ids."
  type = map(object({
    instance_type       = string
    ami_id              = string
    root_volume_size_gb = optional(number, 200)
  }))

  validation {
    condition     = length(var.gpu_classes) > 0
    error_message = "gpu_classes needs at least one GPU class."
  }
}

variable "user_data_placeholder" {
  description = "User data baked into each launch template; the controller replaces it with the node bootstrap at launch."
  type        = string
  default     = "#!/bin/sh\n# Placeholder: the Burster controller supplies the node bootstrap as user data at launch.\nexit 0\n"
}

variable "associate_public_ip_address" {
  description = "Give nodes a public IP. Off by default: nodes reach the internet through NAT."
  type        = bool
  default     = false
}

variable "metadata_hop_limit" {
  description = "IMDSv2 PUT response hop limit; raise to 2 only if containers on the node must reach IMDS."
  type        = number
  default     = 1
}

variable "ebs_kms_key_arn" {
  description = "KMS key ARN for the encrypted EBS root volumes; null uses the account's default EBS key."
  type        = string
  default     = null
}

variable "sqs_kms_key_arn" {
  description = "KMS key ARN for the interruption queue; null uses SQS-managed encryption (SSE-SQS)."
  type        = string
  default     = null
}

variable "onprem_cidr_blocks" {
  description = "On-premises CIDR blocks (over VPN or Direct Connect) that may reach the nodes, and that nodes may reach."
  type        = list(string)
  default     = []
}

variable "ingress_tcp_ports" {
  description = "TCP ports opened on the nodes to onprem_cidr_blocks (for example 6818 for slurmd, 10250 for kubelet)."
  type        = list(number)
  default     = []
}

variable "egress_cidr_blocks" {
  description = "Where nodes may open connections on egress_tcp_ports (package mirrors, registries, AWS APIs via NAT)."
  type        = list(string)
  default     = ["0.0.0.0/0"]
}

variable "egress_tcp_ports" {
  description = "TCP ports nodes may reach in egress_cidr_blocks."
  type        = list(number)
  default     = [80, 443]
}

variable "node_policy_arns" {
  description = "Managed policies attached to the node role (for example AmazonSSMManagedInstanceCore). None by default."
  type        = list(string)
  default     = []
}

variable "tags" {
  description = "Extra tags for every resource this module creates."
  type        = map(string)
  default     = {}
}
