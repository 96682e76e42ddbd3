# shellcheck shell=bash
# Sourced by the hack/ scripts and .ci/run. It defines:
#   ensure_controller_gen  builds controller-gen from internal/tools once per
#                          version into $CONVERGE_TOOLS_BIN (default ./bin,
#                          git-ignored) and sets CONTROLLER_GEN to its path;
#   generate_deepcopy      regenerates every zz_generated.deepcopy.go of
#                          codegen_paths in the current directory;
#   go_modules             prints the directory of every Go module;
#   has_packages MOD       succeeds when module MOD has Go packages;
#   integration_packages MOD
#                          prints the packages of module MOD that have
#                          integration tests.

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

# go_modules prints the directory of every Go module of the repository,
# relative to its top ("." for the root module), one a line, sorted: each
# directory of a go.mod that git tracks or would track, except under
# testdata (a test's fixture).
go_modules() {
  local mod
  (cd "$repo_root" && git ls-files --cached --others --exclude-standard -- go.mod '*/go.mod') |
    grep -v '\(^\|/\)testdata/' |
    while read -r mod; do
      if [ -f "$repo_root/$mod" ]; then dirname "$mod"; fi
    done | sort -u
}

# has_packages MOD succeeds when module MOD (a directory of go_modules) has
# Go packages to vet and test; a tools module has none but a file excluded
# by its build tag. A module go list cannot read ends the calling script.
has_packages() {
  local out
  if ! out=$(cd "$repo_root/$1" && go list ./... 2>&1); then
    echo "$out" >&2
    echo "go list failed in module $1" >&2
    exit 1
  fi
  [ -n "$(grep -v '^go: warning: "./..." matched no packages$' <<<"$out")" ]
}

# integration_packages MOD prints the import paths of the packages of module
# MOD (a directory of go_modules) that have integration tests: a test file
# built only with -tags integration.
integration_packages() {
  (cd "$repo_root/$1" && go list -tags integration \
    -f '{{.ImportPath}} {{.Dir}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}' ./... 2>/dev/null) |
    while read -r pkg dir files; do
      for f in $files; do
        if grep -q '^//go:build integration$' "$dir/$f"; then
          echo "$pkg"
          break
        fi
      done
    done
}
