# Resource group, VNet and subnet, NSG, and optional NAT gateway for the GPU nodes.

data "azurerm_client_config" "current" {}

locals {
  managed_tags = { "managed-by" = "burster", "burster-cluster" = var.cluster }
  tags         = merge(var.tags, local.managed_tags)
  rg_name      = coalesce(var.resource_group_name, "${var.name_prefix}-${var.cluster}")
  base_name    = "${var.name_prefix}-${var.cluster}"
}

resource "azurerm_resource_group" "burster" {
  name     = local.rg_name
  location = var.location
  tags     = local.tags
}

resource "azurerm_virtual_network" "nodes" {
  name                = "${local.base_name}-vnet"
  location            = azurerm_resource_group.burster.location
  resource_group_name = azurerm_resource_group.burster.name
  address_space       = var.address_space
  tags                = local.tags
}

resource "azurerm_subnet" "nodes" {
  name                 = "${local.base_name}-nodes"
  resource_group_name  = azurerm_resource_group.burster.name
  virtual_network_name = azurerm_virtual_network.nodes.name
  address_prefixes     = var.subnet_prefixes
}

resource "azurerm_network_security_group" "nodes" {
  name                = "${local.base_name}-nodes"
  location            = azurerm_resource_group.burster.location
  resource_group_name = azurerm_resource_group.burster.name
  tags                = local.tags
}

# Inbound from the internet stays denied by the NSG's default rules; traffic inside the VNet is
# allowed by them (NCCL between nodes). Only the listed ports are opened to on-premises.
resource "azurerm_network_security_rule" "onprem" {
  count = length(var.onprem_source_ranges) > 0 && length(var.ingress_tcp_ports) > 0 ? 1 : 0

  name                        = "allow-onprem-tcp"
  description                 = "TCP ${join(",", var.ingress_tcp_ports)} from on-premises"
  priority                    = 200
  direction                   = "Inbound"
  access                      = "Allow"
  protocol                    = "Tcp"
  source_port_range           = "*"
  destination_port_ranges     = [for p in var.ingress_tcp_ports : tostring(p)]
  source_address_prefixes     = var.onprem_source_ranges
  destination_address_prefix  = "VirtualNetwork"
  resource_group_name         = azurerm_resource_group.burster.name
  network_security_group_name = azurerm_network_security_group.nodes.name
}

resource "azurerm_subnet_network_security_group_association" "nodes" {
  subnet_id                 = azurerm_subnet.nodes.id
  network_security_group_id = azurerm_network_security_group.nodes.id
}

resource "azurerm_public_ip" "nat" {
  count = var.nat_gateway ? 1 : 0

  name                = "${local.base_name}-nat"
  location            = azurerm_resource_group.burster.location
  resource_group_name = azurerm_resource_group.burster.name
  allocation_method   = "Static"
  sku                 = "Standard"
  tags                = local.tags
}

resource "azurerm_nat_gateway" "nodes" {
  count = var.nat_gateway ? 1 : 0

  name                = "${local.base_name}-nat"
  location            = azurerm_resource_group.burster.location
  resource_group_name = azurerm_resource_group.burster.name
  sku_name            = "Standard"
  tags                = local.tags
}

resource "azurerm_nat_gateway_public_ip_association" "nodes" {
  count = var.nat_gateway ? 1 : 0

  nat_gateway_id       = azurerm_nat_gateway.nodes[0].id
  public_ip_address_id = azurerm_public_ip.nat[0].id
}

resource "azurerm_subnet_nat_gateway_association" "nodes" {
  count = var.nat_gateway ? 1 : 0

  subnet_id      = azurerm_subnet.nodes.id
  nat_gateway_id = azurerm_nat_gateway.nodes[0].id
}
