# Security group of the GPU nodes: all traffic between nodes (NCCL, EFA), the listed TCP ports from
# on-premises, and egress only to on-premises and to egress_cidr_blocks on egress_tcp_ports.

resource "aws_security_group" "node" {
  name_prefix = "${var.name_prefix}-${var.cluster}-node-"
  description = "Burster GPU nodes of cluster ${var.cluster}"
  vpc_id      = var.vpc_id
  tags        = local.tags

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_vpc_security_group_ingress_rule" "node_to_node" {
  security_group_id            = aws_security_group.node.id
  description                  = "All traffic between Burster nodes (NCCL, EFA)"
  ip_protocol                  = "-1"
  referenced_security_group_id = aws_security_group.node.id
  tags                         = local.tags
}

resource "aws_vpc_security_group_egress_rule" "node_to_node" {
  security_group_id            = aws_security_group.node.id
  description                  = "All traffic between Burster nodes (NCCL, EFA)"
  ip_protocol                  = "-1"
  referenced_security_group_id = aws_security_group.node.id
  tags                         = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "onprem" {
  for_each = { for p in setproduct(var.onprem_cidr_blocks, var.ingress_tcp_ports) : "${p[0]}:${p[1]}" => p }

  security_group_id = aws_security_group.node.id
  description       = "TCP ${each.value[1]} from on-premises ${each.value[0]}"
  ip_protocol       = "tcp"
  from_port         = each.value[1]
  to_port           = each.value[1]
  cidr_ipv4         = each.value[0]
  tags              = local.tags
}

resource "aws_vpc_security_group_egress_rule" "onprem" {
  for_each = toset(var.onprem_cidr_blocks)

  security_group_id = aws_security_group.node.id
  description       = "All traffic to on-premises ${each.value}"
  ip_protocol       = "-1"
  cidr_ipv4         = each.value
  tags              = local.tags
}

resource "aws_vpc_security_group_egress_rule" "outbound" {
  for_each = { for p in setproduct(var.egress_cidr_blocks, var.egress_tcp_ports) : "${p[0]}:${p[1]}" => p }

  security_group_id = aws_security_group.node.id
  description       = "TCP ${each.value[1]} to ${each.value[0]}"
  ip_protocol       = "tcp"
  from_port         = each.value[1]
  to_port           = each.value[1]
  cidr_ipv4         = each.value[0]
  tags              = local.tags
}
