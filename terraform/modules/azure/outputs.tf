# Each output is named after its key under [clouds.azure] (cluster: under [controller]) in Burster's config file.

output "subscription_id" {
  description = "clouds.azure.subscription_id"
  value       = data.azurerm_client_config.current.subscription_id
}

output "resource_group" {
  description = "clouds.azure.resource_group"
  value       = azurerm_resource_group.burster.name
}

output "location" {
  description = "clouds.azure.location"
  value       = azurerm_resource_group.burster.location
}

output "subnet_id" {
  description = "clouds.azure.subnet_id"
  value       = azurerm_subnet.nodes.id
}

output "identity_id" {
  description = "clouds.azure.identity_id: resource ID of the controller's user-assigned managed identity."
  value       = azurerm_user_assigned_identity.controller.id
}

output "image_reference" {
  description = "clouds.azure.image_reference: publisher, offer, sku and version of the node image."
  value       = var.image_reference
}

output "cluster" {
  description = "controller.cluster: the cluster these resources serve; VMs carry the tag burster-cluster = <cluster>."
  value       = var.cluster
}
