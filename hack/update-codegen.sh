#!/usr/bin/env bash
# Regenerates the DeepCopy methods (zz_generated.deepcopy.go) of the engines'
# persisted types, and of internal/crdcheck, with controller-gen pinned in
# internal/tools. Run it after changing a type that a Status or Policy
# reaches, and commit the result; hack/verify-codegen.sh checks it in CI.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
ensure_controller_gen
cd "$repo_root"
generate_deepcopy
