#!/usr/bin/env bash
# Regenerates the sample operator's generated files with controller-gen, as
# pinned in the repository's internal/tools: the DeepCopy methods of
# api/v1alpha1, the CRDs in config/crd/bases (from the API types and their
# markers) and the ClusterRole in config/rbac (from the +kubebuilder:rbac
# markers of internal/controller). With --verify it writes nothing and fails
# when a committed file differs from what it would write.
set -euo pipefail
sample=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=SCRIPTDIR/../../../../hack/lib.sh
source "$sample/../../../hack/lib.sh"
ensure_controller_gen

out=$sample
if [ "${1:-}" = "--verify" ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
elif [ $# -gt 0 ]; then
  echo "usage: $0 [--verify]" >&2
  exit 2
fi

generate() {
  local dir=$1
  mkdir -p "$dir/api/v1alpha1" "$dir/config/crd/bases" "$dir/config/rbac"
  # Start from nothing, so that a CRD of a removed type goes away.
  rm -f "$dir"/config/crd/bases/*.yaml
  (cd "$sample" && "$CONTROLLER_GEN" paths=./... \
    object output:object:dir="$dir/api/v1alpha1" \
    crd output:crd:dir="$dir/config/crd/bases" \
    rbac:roleName=manager-role output:rbac:dir="$dir/config/rbac")
}

generate "$out"
if [ "$out" = "$sample" ]; then
  exit 0
fi
status=0
for f in api/v1alpha1/zz_generated.deepcopy.go config/rbac/role.yaml; do
  diff -u "$sample/$f" "$out/$f" >&2 || status=1
done
diff -ru "$sample/config/crd/bases" "$out/config/crd/bases" >&2 || status=1
if [ "$status" != 0 ]; then
  echo "sample/hack/update-generated.sh --verify: generated files are stale (diff above): run sample/hack/update-generated.sh and commit the result" >&2
  exit 1
fi
echo "sample/hack/update-generated.sh --verify: generated files are up to date"
