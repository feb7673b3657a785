# Example root: the Azure prerequisites of one Burster cluster.
# terraform init && terraform apply, then: terraform output -json | burster config from-terraform -

terraform {
  required_version = ">= 1.5.0"

  required_providers {
    azurerm = {
      source  = "hashicorp/azurerm"
      version = ">= 3.90, < 5.0"
    }
  }
}

provider "azurerm" {
  features {}
  subscription_id = var.subscription_id
}

variable "subscription_id" {
  description = "Subscription of the burst nodes."
  type        = string
}

variable "cluster" {
  description = "controller.cluster of the Burster config."
  type        = string
  default     = "default"
}

variable "location" {
  description = "Azure region of the burst nodes."
  type        = string
  default     = "eastus"
}

variable "address_space" {
  description = "Address space of the node VNet; must not overlap on-premises."
  type        = list(string)
  default     = ["10.64.0.0/16"]
}

variable "subnet_prefixes" {
  description = "Address prefixes of the node subnet."
  type        = list(string)
  default     = ["10.64.0.0/20"]
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

module "burster" {
  source = "../../modules/azure"

  cluster              = var.cluster
  location             = var.location
  address_space        = var.address_space
  subnet_prefixes      = var.subnet_prefixes
  onprem_source_ranges = var.onprem_source_ranges
  ingress_tcp_ports    = var.ingress_tcp_ports
}

# One output per key of [clouds.azure], and cluster ([controller]); `burster config from-terraform` rejects any other name.
output "subscription_id" {
  description = "clouds.azure.subscription_id"
  value       = module.burster.subscription_id
}

output "resource_group" {
  description = "clouds.azure.resource_group"
  value       = module.burster.resource_group
}

output "location" {
  description = "clouds.azure.location"
  value       = module.burster.location
}

output "subnet_id" {
  description = "clouds.azure.subnet_id"
  value       = module.burster.subnet_id
}

output "identity_id" {
  description = "clouds.azure.identity_id"
  value       = module.burster.identity_id
}

output "image_reference" {
  description = "clouds.azure.image_reference"
  value       = module.burster.image_reference
}

output "cluster" {
  description = "controller.cluster"
  value       = module.burster.cluster
}
