#!/usr/bin/env bash
# Static checks of the Terraform modules and example roots:
#   1. terraform fmt -check -recursive   (skipped with a message when terraform is absent)
#   2. checkov over modules/ and examples/ (skipped with a message when no checkov is found)
# `terraform validate` is not run: it needs provider plugins, which are not downloadable offline.
# CHECKOV may name the checkov binary; install it in its own virtualenv, never beside Burster:
#   python3 -m venv /tmp/checkov-venv && /tmp/checkov-venv/bin/pip install checkov
#   CHECKOV=/tmp/checkov-venv/bin/checkov terraform/check.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
status=0

if command -v terraform >/dev/null 2>&1; then
  echo "== terraform fmt -check -recursive ($(terraform version 2>/dev/null | head -n 1))"
  if terraform -chdir="$here" fmt -check -recursive 2>/dev/null; then
    echo "fmt: ok"
  else
    echo "fmt: the files listed above need 'terraform fmt -recursive'" >&2
    status=1
  fi
else
  echo "== terraform not found on PATH: skipping 'terraform fmt -check'"
fi

checkov="${CHECKOV:-}"
if [[ -z "$checkov" ]]; then
  checkov="$(command -v checkov || true)"
fi
if [[ -z "$checkov" && -x /tmp/checkov-venv/bin/checkov ]]; then
  checkov=/tmp/checkov-venv/bin/checkov
fi

if [[ -n "$checkov" && -x "$checkov" ]]; then
  echo "== checkov $("$checkov" --version 2>/dev/null)"
  # --skip-download: no network; skips come only from inline #checkov:skip comments with reasons.
  if "$checkov" --directory "$here" --framework terraform --skip-download --compact --quiet; then
    echo "checkov: 0 failed checks"
  else
    status=1
  fi
else
  echo "== checkov not found (set CHECKOV=/path/to/checkov): skipping the checkov scan"
fi

exit "$status"
