# shellcheck shell=bash
# Sourced by the hack/ scripts. It defines:
#   ensure_controller_gen  builds controller-gen from internal/tools once per
#                          version into $CONVERGE_TOOLS_BIN (default ./bin,
#                          git-ignored) and sets CONTROLLER_GEN to its path;
#   generate_deepcopy      regenerates every zz_generated.deepcopy.go of
#                          codegen_paths in the current directory.

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The packages whose DeepCopy methods controller-gen generates.
codegen_paths=(. ./rollout/... ./addon/... ./payload/... ./internal/crdcheck/...)

ensure_controller_gen() {
  local tools="$repo_root/internal/tools"
  local key
  key=$(cat "$tools/go.mod" "$tools/go.sum" | sha256sum | cut -c1-16)
  local bindir="${CONVERGE_TOOLS_BIN:-$repo_root/bin}"
  CONTROLLER_GEN="$bindir/controller-gen-$key"
  if [ -x "$CONTROLLER_GEN" ]; then
    return
  fi
  mkdir -p "$bindir"
  echo "building controller-gen from internal/tools into $CONTROLLER_GEN (a few minutes on a cold build cache)" >&2
  local tmp="$CONTROLLER_GEN.tmp.$$"
  if ! (cd "$tools" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 \
      go build -trimpath -o "$tmp" sigs.k8s.io/controller-tools/cmd/controller-gen); then
    rm -f "$tmp"
    echo "building controller-gen failed" >&2
    return 1
  fi
  mv -f "$tmp" "$CONTROLLER_GEN"
}

generate_deepcopy() {
  local p
  # Start from nothing, so that a file for a package that has no marked
  # type any more goes away, and methods written by hand in the file are
  # not mistaken by controller-gen for methods it must not generate. A path
  # without /... is one package: only its own directory.
  for p in "${codegen_paths[@]}"; do
    if [ "${p%/...}" != "$p" ]; then
      find "${p%/...}" -name zz_generated.deepcopy.go -delete
    else
      find "$p" -maxdepth 1 -name zz_generated.deepcopy.go -delete
    fi
  done
  local args=()
  for p in "${codegen_paths[@]}"; do
    args+=("paths=$p")
  done
  "$CONTROLLER_GEN" object "${args[@]}"
}
