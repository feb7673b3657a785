# Each output is named after its key under [clouds.gcp] (cluster: under [controller]) in Burster's config file.

output "project" {
  description = "clouds.gcp.project"
  value       = var.project
}

output "zones" {
  description = "clouds.gcp.zones"
  value       = var.zones
}

output "instance_templates" {
  description = "clouds.gcp.instance_templates: GPU class to instance template self link."
  value       = { for k, t in google_compute_instance_template.gpu : k => t.self_link }
}

output "node_service_account" {
  description = "clouds.gcp.node_service_account: email of the node service account."
  value       = google_service_account.node.email
}

output "network" {
  description = "clouds.gcp.network"
  value       = var.network
}

output "subnetwork" {
  description = "clouds.gcp.subnetwork"
  value       = var.subnetwork
}

output "cluster" {
  description = "controller.cluster: the cluster these resources serve; instances carry the label burster-cluster = <cluster>."
  value       = var.cluster
}
