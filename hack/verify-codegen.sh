#!/usr/bin/env bash
# Fails when a generated file differs from what hack/update-codegen.sh writes:
# it generates into a copy of the work tree and compares the two trees, so
# the work tree itself is never changed.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
ensure_controller_gen
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
tar -C "$repo_root" --exclude=./.git --exclude=./bin --exclude=./.cache -cf - . | tar -C "$copy" -xf -
(cd "$copy" && generate_deepcopy)
if ! diff -ru --exclude=.git --exclude=bin --exclude=.cache "$repo_root" "$copy" >"$copy.diff"; then
  sed -e "s|$copy|(generated)|g" -e "s|$repo_root|(work tree)|g" "$copy.diff" >&2
  rm -f "$copy.diff"
  echo >&2
  echo "hack/verify-codegen.sh: generated files are stale (diff above): run hack/update-codegen.sh and commit the result" >&2
  exit 1
fi
rm -f "$copy.diff"
echo "hack/verify-codegen.sh: generated files are up to date"
