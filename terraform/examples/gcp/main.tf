# Example root: the GCP prerequisites of one Burster cluster.
# terraform init && terraform apply, then: terraform output -json | burster config from-terraform -

terraform {
  required_version = ">= 1.5.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 5.10, < 7.0"
    }
  }
}

provider "google" {
  project = var.project
}

variable "project" {
  description = "GCP project of the burst nodes."
  type        = string
}

variable "cluster" {
  description = "controller.cluster of the Burster config."
  type        = string
  default     = "default"
}

variable "zones" {
  description = "Zones the controller may launch into."
  type        = list(string)
  default     = ["us-central1-a", "us-central1-b"]
}

variable "network" {
  description = "Self link of the existing VPC network, connected to on-premises."
  type        = string
}

variable "subnetwork" {
  description = "Self link of the subnetwork of those zones' region."
  type        = string
}

variable "gpu_classes" {
  description = "GPU class to machine type, accelerator and image; see terraform.tfvars.example."
  type = map(object({
    machine_type      = string
    image             = string
    accelerator_type  = optional(string)
    accelerator_count = optional(number, 0)
    spot              = optional(bool, true)
    disk_size_gb      = optional(number, 200)
    disk_type         = optional(string, "pd-balanced")
  }))
}

variable "onprem_source_ranges" {
  description = "On-premises CIDR ranges."
  type        = list(string)
  default     = []
}

variable "ingress_tcp_ports" {
  description = "TCP ports the on-premises scheduler needs on the nodes."
  type        = list(number)
  default     = []
}

variable "controller_impersonators" {
  description = "IAM members that may act as the controller service account."
  type        = list(string)
  default     = []
}

module "burster" {
  source = "../../modules/gcp"

  project                  = var.project
  cluster                  = var.cluster
  zones                    = var.zones
  network                  = var.network
  subnetwork               = var.subnetwork
  gpu_classes              = var.gpu_classes
  onprem_source_ranges     = var.onprem_source_ranges
  ingress_tcp_ports        = var.ingress_tcp_ports
  controller_impersonators = var.controller_impersonators
}

# One output per key of [clouds.gcp], and cluster ([controller]); `burster config from-terraform` rejects any other name.
output "project" {
  description = "clouds.gcp.project"
  value       = module.burster.project
}

output "zones" {
  description = "clouds.gcp.zones"
  value       = module.burster.zones
}

output "instance_templates" {
  description = "clouds.gcp.instance_templates"
  value       = module.burster.instance_templates
}

output "node_service_account" {
  description = "clouds.gcp.node_service_account"
  value       = module.burster.node_service_account
}

output "network" {
  description = "clouds.gcp.network"
  value       = module.burster.network
}

output "subnetwork" {
  description = "clouds.gcp.subnetwork"
  value       = module.burster.subnetwork
}

output "cluster" {
  description = "controller.cluster"
  value       = module.burster.cluster
}
