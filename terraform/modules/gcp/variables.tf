variable "project" {
  description = "GCP project the nodes run in (clouds.gcp.project)."
  type        = string
}

variable "cluster" {
  description = "Burster cluster name (controller.cluster); instances carry the label burster-cluster = <cluster>."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{0,62}$", var.cluster))
    error_message = "cluster must match ^[a-z0-9][a-z0-9-]*$ and be at most 63 characters, like controller.cluster."
  }
}

variable "name_prefix" {
  description = "Prefix of every resource name this module creates (lower case letters, digits, hyphens)."
  type        = string
  default     = "burster"
}

variable "zones" {
  description = "Zones the controller may launch into (clouds.gcp.zones)."
  type        = list(string)

  validation {
    condition     = length(var.zones) > 0
    error_message = "zones needs at least one zone."
  }
}

variable "network" {
  description = "Self link of the existing VPC network, connected to on-premises (clouds.gcp.network)."
  type        = string
}

variable "subnetwork" {
  description = "Self link of the existing subnetwork nodes attach to (clouds.gcp.subnetwork)."
  type        = string
}

variable "gpu_classes" {
  description = "One instance template per GPU class: the class name is the key of clouds.gcp.instance_templates."
  type = map(object({
    machine_type      = string
    image             = string
    accelerator_type  = optional(string)
    accelerator_count = optional(number, 0)
    spot              = optional(bool, true)
    disk_size_gb      = optional(number, 200)
    disk_type         = optional(string, "pd-balanced")
  }))

  validation {
    condition     = length(var.gpu_classes) > 0
    error_message = "gpu_classes needs at least one GPU class."
  }
}

variable "external_ip" {
  description = "Give nodes an external IP. Off by default: nodes reach the internet through Cloud NAT."
  type        = bool
  default     = false
}

variable "enable_secure_boot" {
  description = "Shielded VM secure boot; the image's GPU driver must be signed (Google's GPU images are)."
  type        = bool
  default     = true
}

variable "disk_kms_key_self_link" {
  description = "Cloud KMS key for the boot disks; null uses Google-managed encryption."
  type        = string
  default     = null
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

variable "node_roles" {
  description = "Project roles of the node service account."
  type        = list(string)
  default     = ["roles/logging.logWriter", "roles/monitoring.metricWriter"]
}

variable "controller_impersonators" {
  description = "IAM members (user:, group:, serviceAccount:) that may mint tokens for the controller service account."
  type        = list(string)
  default     = []
}

variable "controller_workload_identity_principals" {
  description = "Workload identity federation principals (principal:// or principalSet://) the controller runs as."
  type        = list(string)
  default     = []
}

variable "enable_apis" {
  description = "Enable the Compute Engine and Cloud Billing (catalog) APIs in the project."
  type        = bool
  default     = true
}

variable "labels" {
  description = "Extra labels for every resource this module creates."
  type        = map(string)
  default     = {}
}
