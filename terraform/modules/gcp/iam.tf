# Controller and node service accounts. The controller's custom role holds only what creating an
# instance from one of these templates, deleting it and listing instances need. The Cloud Billing
# catalog (prices) needs no IAM permission, only the enabled API.

locals {
  # Role IDs are at most 64 characters; account IDs 6 to 30, not ending with a hyphen. A long cluster
  # name is cut and a hash of it added, so the two accounts (and two clusters) never share an ID.
  role_full             = "${replace(var.name_prefix, "-", "_")}_${replace(var.cluster, "-", "_")}_controller"
  role_id               = length(local.role_full) <= 64 ? local.role_full : "${substr(local.role_full, 0, 52)}_${substr(sha1(var.cluster), 0, 11)}"
  account_full          = "${var.name_prefix}-${var.cluster}"
  account_base          = length(local.account_full) <= 25 ? local.account_full : "${trim(substr(local.account_full, 0, 20), "-")}-${substr(sha1(var.cluster), 0, 4)}"
  controller_account_id = "${local.account_base}-ctl"
  node_account_id       = "${local.account_base}-node"

  # what instances.insert from one of these templates, instances.delete/get/aggregatedList and the
  # operation reads of the GCP adapter check
  controller_permissions = [
    "compute.instances.create",
    "compute.instances.delete",
    "compute.instances.get",
    "compute.instances.list",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setServiceAccount",
    "compute.instances.setTags",
    "compute.disks.create",
    "compute.subnetworks.use",
    "compute.instanceTemplates.get",
    "compute.instanceTemplates.useReadOnly",
    # a template's source image from this project (a custom GPU image): public ones need nothing
    "compute.images.useReadOnly",
    "compute.zoneOperations.get",
    # operations aggregatedList (compute.instances.preempted events, how preemptions are detected)
    "compute.globalOperations.list",
  ]
}

resource "google_project_service" "apis" {
  for_each = var.enable_apis ? toset(["compute.googleapis.com", "cloudbilling.googleapis.com"]) : toset([])

  project            = var.project
  service            = each.value
  disable_on_destroy = false
}

resource "google_service_account" "controller" {
  project      = var.project
  account_id   = local.controller_account_id
  display_name = "Burster controller (${var.cluster})"
  description  = "Creates, lists and deletes Burster GPU nodes of cluster ${var.cluster}."
}

resource "google_service_account" "node" {
  project      = var.project
  account_id   = local.node_account_id
  display_name = "Burster GPU node (${var.cluster})"
  description  = "Identity of Burster GPU nodes of cluster ${var.cluster}."
}

resource "google_project_iam_custom_role" "controller" {
  project     = var.project
  role_id     = local.role_id
  title       = "Burster controller (${var.cluster})"
  description = "Create, delete and list GPU instances from Burster templates; read zone operations."
  permissions = concat(
    local.controller_permissions,
    # an instance with an access config (external_ip = true) also needs this on its subnetwork
    var.external_ip ? ["compute.subnetworks.useExternalIp"] : [],
  )
}

resource "google_project_iam_member" "controller" {
  project = var.project
  role    = google_project_iam_custom_role.controller.id
  member  = "serviceAccount:${google_service_account.controller.email}"
}

# The equivalent of iam:PassRole: the controller may attach the node account, and no other.
resource "google_service_account_iam_member" "controller_uses_node" {
  service_account_id = google_service_account.node.name
  role               = "roles/iam.serviceAccountUser"
  member             = "serviceAccount:${google_service_account.controller.email}"
}

resource "google_service_account_iam_member" "impersonators" {
  for_each = toset(var.controller_impersonators)

  service_account_id = google_service_account.controller.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = each.value
}

resource "google_service_account_iam_member" "workload_identity" {
  for_each = toset(var.controller_workload_identity_principals)

  service_account_id = google_service_account.controller.name
  role               = "roles/iam.workloadIdentityUser"
  member             = each.value
}

resource "google_project_iam_member" "node" {
  for_each = toset(var.node_roles)

  project = var.project
  role    = each.value
  member  = "serviceAccount:${google_service_account.node.email}"
}
