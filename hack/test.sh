#!/usr/bin/env bash
# Runs the unit tests of every Go module of the repository: the root module
# and each nested one (contrib/controller-runtime, its sample, any other),
# found by their go.mod files, so that none is left out the way `go test
# ./...` at the top leaves out nested modules. With no arguments each module
# runs `go test -race -count=1 ./...`; arguments replace those flags:
#
#   hack/test.sh                       # every module's unit tests, under -race
#   hack/test.sh -count=1 -run Example # every module's examples
#
# Every module is tested even after one fails; the script fails if any did
# and names them.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$repo_root"

flags=(-race -count=1)
if [ $# -gt 0 ]; then
  flags=("$@")
fi
failed=()
while read -r mod; do
  if ! has_packages "$mod"; then
    echo "-- $mod: no packages (a tools module)"
    continue
  fi
  echo "-- $mod: go test ${flags[*]} ./..."
  if ! (cd "$mod" && go test "${flags[@]}" ./...); then
    failed+=("$mod")
  fi
done < <(go_modules)
if [ ${#failed[@]} -gt 0 ]; then
  echo "hack/test.sh: tests failed in: ${failed[*]}" >&2
  exit 1
fi
