#!/usr/bin/env bash
# Checks that every engine's Policy and Status can be embedded in a host's
# CRD. controller-gen generates CRDs for the resources of internal/crdcheck,
# which embed them, without crd:allowDangerousTypes, so it refuses a float
# and a field without a JSON tag. Then the contract test of internal/crdcheck
# checks what controller-gen lets through: time.Duration, maps of structs,
# lists of objects without a list type, and whether a resource with every
# field set, as the engines write it, fits the generated schema (no field
# pruned, no type refused).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
ensure_controller_gen
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$repo_root"
status=0
if ! "$CONTROLLER_GEN" crd paths=./internal/crdcheck/... output:crd:dir="$out/crds" 2>"$out/errors"; then
  grep -v '^run `controller-gen' "$out/errors" | sed "s|$repo_root/||" >&2
  echo "hack/verify-crd-embeddable.sh: controller-gen crd refused the engines' types (above)" >&2
  status=1
fi
if ! CRDCHECK_CRD_DIR="$out/crds" go test -count=1 -tags crdcheck -run '^TestEmbeddedTypesFollowTheContract$' \
    ./internal/crdcheck/ >"$out/test" 2>&1; then
  grep -E '^\s+(--- FAIL|contract_test.go|Error)' "$out/test" >&2 || cat "$out/test" >&2
  echo "hack/verify-crd-embeddable.sh: the engines' persisted types break the contract (above)" >&2
  status=1
fi
if [ "$status" = 0 ]; then
  echo "hack/verify-crd-embeddable.sh: every engine's Policy and Status embed in a CRD"
fi
exit "$status"
