#!/usr/bin/env bash
# run.sh builds and runs the library-go installer benchmark in a temporary
# copy of this directory, with library-go, openshift/api and
# openshift/client-go replaced by local trees (none is on the module proxy
# at the versions library-go needs).
#
#   hack/librarygo-bench/run.sh LIBRARY_GO [API [CLIENT_GO]] [-- GO_TEST_FLAGS...]
#
# or set LIBRARY_GO, OPENSHIFT_API, OPENSHIFT_CLIENT_GO. API and CLIENT_GO
# default to the copies library-go vendors (vendor/github.com/openshift/...),
# which are the versions its go.mod pins. GO_TEST_FLAGS default to
#   -run XXX -bench BenchmarkInstallerControllerSync -count 5 -benchmem
# Set KEEP=1 to keep (and print) the temporary module.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
positional=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  positional+=("$1")
  shift
done
[ "${1:-}" = "--" ] && shift
library_go=${positional[0]:-${LIBRARY_GO:-}}
api=${positional[1]:-${OPENSHIFT_API:-}}
client_go=${positional[2]:-${OPENSHIFT_CLIENT_GO:-}}
if [ -z "$library_go" ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
abs() { (cd "$1" && pwd); }
library_go=$(abs "$library_go")

work=$(mktemp -d)
if [ "${KEEP:-}" = 1 ]; then
  echo "module in $work" >&2
else
  trap 'rm -rf "$work"' EXIT
fi

# vendored_module DIR MODULE copies library-go's vendored copy of MODULE and
# gives it the go.mod a replace target needs.
vendored_module() {
  local src="$library_go/vendor/$2" dst="$work/vendor-modules/$2"
  if [ ! -d "$src" ]; then
    echo "run.sh: $src does not exist: pass the $2 tree" >&2
    exit 2
  fi
  mkdir -p "$dst"
  cp -R "$src/." "$dst/"
  printf 'module %s\n\ngo 1.25.0\n' "$2" >"$dst/go.mod"
  echo "$dst"
}
if [ -n "$api" ]; then api=$(abs "$api"); else api=$(vendored_module "$library_go" github.com/openshift/api); fi
if [ -n "$client_go" ]; then client_go=$(abs "$client_go"); else client_go=$(vendored_module "$library_go" github.com/openshift/client-go); fi

cp "$here/go.mod.in" "$work/go.mod"
cp "$here"/*_test.go "$work/"
cd "$work"
go mod edit \
  -replace "github.com/openshift/library-go=$library_go" \
  -replace "github.com/openshift/api=$api" \
  -replace "github.com/openshift/client-go=$client_go"
GOFLAGS=-mod=mod go mod tidy
if [ $# -eq 0 ]; then
  set -- -run XXX -bench BenchmarkInstallerControllerSync -count 5 -benchmem
fi
echo "library-go: $library_go ($(git -C "$library_go" rev-parse HEAD 2>/dev/null || echo 'not a git tree'))" >&2
GOFLAGS=-mod=mod go test -tags librarygobench "$@" .
