# One instance template per GPU class: Spot or Standard, shielded VM, no external IP by default,
# the node service account, OS Login and no project-wide SSH keys.

locals {
  managed_labels = { "managed-by" = "burster", "burster-cluster" = var.cluster }
  labels         = merge(var.labels, local.managed_labels)
  class_slugs    = { for k, _ in var.gpu_classes : k => trim(replace(lower(k), "/[^a-z0-9-]/", "-"), "-") }
}

resource "google_compute_instance_template" "gpu" {
  #checkov:skip=CKV_GCP_40:access_config (external IP) is rendered only when var.external_ip is true; it defaults to false and checkov cannot evaluate the dynamic block's condition.
  for_each = var.gpu_classes

  project        = var.project
  name_prefix    = substr("${var.name_prefix}-${var.cluster}-${local.class_slugs[each.key]}-", 0, 37)
  description    = "Burster ${each.key} GPU node for cluster ${var.cluster}"
  machine_type   = each.value.machine_type
  can_ip_forward = false
  labels         = merge(local.labels, { "burster-gpu-class" = local.class_slugs[each.key] })

  disk {
    boot         = true
    auto_delete  = true
    source_image = each.value.image
    disk_size_gb = each.value.disk_size_gb
    disk_type    = each.value.disk_type
    labels       = local.labels

    dynamic "disk_encryption_key" {
      for_each = var.disk_kms_key_self_link == null ? [] : [var.disk_kms_key_self_link]
      content {
        kms_key_self_link = disk_encryption_key.value
      }
    }
  }

  network_interface {
    subnetwork = var.subnetwork

    dynamic "access_config" {
      for_each = var.external_ip ? [1] : []
      content {
        network_tier = "PREMIUM"
      }
    }
  }

  dynamic "guest_accelerator" {
    for_each = each.value.accelerator_count > 0 ? [1] : []
    content {
      type  = each.value.accelerator_type
      count = each.value.accelerator_count
    }
  }

  scheduling {
    provisioning_model          = each.value.spot ? "SPOT" : "STANDARD"
    preemptible                 = each.value.spot
    automatic_restart           = !each.value.spot
    on_host_maintenance         = "TERMINATE"
    instance_termination_action = each.value.spot ? "DELETE" : null
  }

  shielded_instance_config {
    enable_secure_boot          = var.enable_secure_boot
    enable_vtpm                 = true
    enable_integrity_monitoring = true
  }

  metadata = {
    block-project-ssh-keys = "true"
    enable-oslogin         = "TRUE"
    serial-port-enable     = "false"
  }

  service_account {
    email  = google_service_account.node.email
    scopes = ["cloud-platform"]
  }

  lifecycle {
    create_before_destroy = true
  }

  depends_on = [google_project_service.apis]
}
