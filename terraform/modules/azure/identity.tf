# The controller's user-assigned identity and a custom role limited to creating, reading and
# deleting VMs (with their NICs, OS disks and launch records) in this resource group only.

resource "azurerm_user_assigned_identity" "controller" {
  name                = "${local.base_name}-controller"
  location            = azurerm_resource_group.burster.location
  resource_group_name = azurerm_resource_group.burster.name
  tags                = local.tags
}

resource "azurerm_role_definition" "controller" {
  name        = "${local.base_name}-controller"
  scope       = azurerm_resource_group.burster.id
  description = "Burster controller (${var.cluster}): create, read and delete GPU VMs in ${local.rg_name}."

  permissions {
    actions = [
      "Microsoft.Compute/virtualMachines/read",
      "Microsoft.Compute/virtualMachines/write",
      "Microsoft.Compute/virtualMachines/delete",
      "Microsoft.Compute/virtualMachines/instanceView/read",
      # azure-core polls VM create/delete through the Azure-AsyncOperation URL
      # (.../providers/Microsoft.Compute/locations/{region}/operations/{id}).
      "Microsoft.Compute/locations/operations/read",
      "Microsoft.Compute/disks/read",
      "Microsoft.Compute/disks/write",
      "Microsoft.Compute/disks/delete",
      # launch records (providers/azure/records.py): empty SSH public key resources that keep
      # which VMs a launch made, so a replay does not make a deleted one again
      "Microsoft.Compute/sshPublicKeys/read",
      "Microsoft.Compute/sshPublicKeys/write",
      "Microsoft.Compute/sshPublicKeys/delete",
      "Microsoft.Network/networkInterfaces/read",
      "Microsoft.Network/networkInterfaces/write",
      "Microsoft.Network/networkInterfaces/delete",
      "Microsoft.Network/networkInterfaces/join/action",
      "Microsoft.Network/virtualNetworks/subnets/read",
      "Microsoft.Network/virtualNetworks/subnets/join/action",
    ]
    not_actions = []
  }

  assignable_scopes = [azurerm_resource_group.burster.id]
}

resource "azurerm_role_assignment" "controller" {
  scope              = azurerm_resource_group.burster.id
  role_definition_id = azurerm_role_definition.controller.role_definition_resource_id
  principal_id       = azurerm_user_assigned_identity.controller.principal_id
  principal_type     = "ServicePrincipal"
}
