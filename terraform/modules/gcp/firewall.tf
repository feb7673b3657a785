# Firewall rules, targeted by the node service account: all traffic between nodes and the listed
# TCP ports from on-premises. Everything else inbound stays denied by the VPC's implied rule.

resource "google_compute_firewall" "node_to_node" {
  project                 = var.project
  name                    = trim(substr("${var.name_prefix}-${var.cluster}-node-to-node", 0, 63), "-")
  description             = "All traffic between Burster nodes of cluster ${var.cluster} (NCCL)"
  network                 = var.network
  direction               = "INGRESS"
  source_service_accounts = [google_service_account.node.email]
  target_service_accounts = [google_service_account.node.email]

  allow {
    protocol = "all"
  }

  log_config {
    metadata = "INCLUDE_ALL_METADATA"
  }
}

resource "google_compute_firewall" "onprem" {
  count = length(var.onprem_source_ranges) > 0 && length(var.ingress_tcp_ports) > 0 ? 1 : 0

  project                 = var.project
  name                    = trim(substr("${var.name_prefix}-${var.cluster}-from-onprem", 0, 63), "-")
  description             = "TCP ${join(",", var.ingress_tcp_ports)} from on-premises to Burster nodes of cluster ${var.cluster}"
  network                 = var.network
  direction               = "INGRESS"
  source_ranges           = var.onprem_source_ranges
  target_service_accounts = [google_service_account.node.email]

  allow {
    protocol = "tcp"
    ports    = [for p in var.ingress_tcp_ports : tostring(p)]
  }

  log_config {
    metadata = "INCLUDE_ALL_METADATA"
  }
}
