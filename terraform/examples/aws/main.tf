# Example root: the AWS prerequisites of one Burster cluster in one region.
# terraform init && terraform apply, then: terraform output -json | burster config from-terraform -

terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.30, < 7.0"
    }
  }
}

provider "aws" {
  region = var.region
}

variable "region" {
  description = "Region of the burst nodes."
  type        = string
  default     = "us-east-1"
}

variable "cluster" {
  description = "controller.cluster of the Burster config."
  type        = string
  default     = "default"
}

variable "vpc_id" {
  description = "Existing VPC, connected to on-premises."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets of that VPC."
  type        = list(string)
}

variable "controller_principal_arns" {
  description = "IAM principals that may assume the controller role."
  type        = list(string)
}

variable "gpu_classes" {
  description = "GPU class to instance type and AMI; see terraform.tfvars.example."
  type = map(object({
    instance_type       = string
    ami_id              = string
    root_volume_size_gb = optional(number, 200)
  }))
}

variable "onprem_cidr_blocks" {
  description = "On-premises CIDR blocks."
  type        = list(string)
  default     = []
}

variable "ingress_tcp_ports" {
  description = "TCP ports the on-premises scheduler needs on the nodes."
  type        = list(number)
  default     = []
}

module "burster" {
  source = "../../modules/aws"

  cluster                   = var.cluster
  vpc_id                    = var.vpc_id
  subnet_ids                = var.subnet_ids
  controller_principal_arns = var.controller_principal_arns
  gpu_classes               = var.gpu_classes
  onprem_cidr_blocks        = var.onprem_cidr_blocks
  ingress_tcp_ports         = var.ingress_tcp_ports
}

# One output per key of [clouds.aws], and cluster ([controller]); `burster config from-terraform` rejects any other name.
output "regions" {
  description = "clouds.aws.regions"
  value       = module.burster.regions
}

output "launch_template_ids" {
  description = "clouds.aws.launch_template_ids"
  value       = module.burster.launch_template_ids
}

output "subnet_ids" {
  description = "clouds.aws.subnet_ids"
  value       = module.burster.subnet_ids
}

output "security_group_ids" {
  description = "clouds.aws.security_group_ids"
  value       = module.burster.security_group_ids
}

output "instance_profile_arn" {
  description = "clouds.aws.instance_profile_arn"
  value       = module.burster.instance_profile_arn
}

output "interruption_queue_url" {
  description = "clouds.aws.interruption_queue_url"
  value       = module.burster.interruption_queue_url
}

output "cluster" {
  description = "controller.cluster"
  value       = module.burster.cluster
}
