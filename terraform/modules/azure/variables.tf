variable "cluster" {
  description = "Burster cluster name (controller.cluster); VMs carry the tag burster-cluster = <cluster>."
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

variable "location" {
  description = "Azure region of the resource group and the nodes (clouds.azure.location)."
  type        = string
}

variable "resource_group_name" {
  description = "Name of the resource group to create; null gives <name_prefix>-<cluster>."
  type        = string
  default     = null
}

variable "address_space" {
  description = "Address space of the node VNet; peer or VPN it to on-premises outside this module."
  type        = list(string)
  default     = ["10.64.0.0/16"]
}

variable "subnet_prefixes" {
  description = "Address prefixes of the node subnet."
  type        = list(string)
  default     = ["10.64.0.0/20"]
}

variable "onprem_source_ranges" {
  description = "On-premises CIDR ranges that may reach the nodes on ingress_tcp_ports."
  type        = list(string)
  default     = []
}

variable "ingress_tcp_ports" {
  description = "TCP ports opened on the nodes to onprem_source_ranges (for example 6818 for slurmd, 10250 for kubelet)."
  type        = list(number)
  default     = []
}

variable "nat_gateway" {
  description = "Give the subnet a NAT gateway for outbound traffic (nodes have no public IP)."
  type        = bool
  default     = true
}

variable "image_reference" {
  description = "Marketplace image of the GPU nodes (clouds.azure.image_reference)."
  type = object({
    publisher = string
    offer     = string
    sku       = string
    version   = string
  })
  default = {
    publisher = "microsoft-dsvm"
    offer     = "ubuntu-hpc"
    sku       = "2204"
    version   = "latest"
  }
}

variable "tags" {
  description = "Extra tags for every resource this module creates."
  type        = map(string)
  default     = {}
}
