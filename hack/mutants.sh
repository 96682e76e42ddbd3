#!/usr/bin/env bash
# Tests an engine's simulator (or exhaustive exploration) with known bugs.
#
#   hack/mutants.sh ENGINE            kill every mutant of ENGINE
#   hack/mutants.sh --refresh ENGINE  re-create each patch on today's code
#
# hack/mutants/ENGINE/NN-name.patch is a bug class kept as a small patch: a
# `git diff` of the non-test files under ENGINE's directory, after a header
# whose lines name the bug and the one test that must kill it:
#
#   Bug: backoff skipped for a node mid-install
#   Killed-By: TestSimRollout
#
#   diff --git a/rollout/nodestatus.go b/rollout/nodestatus.go
#   ...
#
# ENGINE's directory is ENGINE/ for a package of the root module, or
# contrib/ENGINE/ for a nested module there (hack/mutants/helm patches
# contrib/helm/, and its tests run inside that module). More header lines:
#
#   Killed-By: TestExplore ./addon/addontest   the test's package, relative
#                                              to the module (default ./ENGINE,
#                                              or ./ for a nested module)
#   Replay: rerun                              the test takes no seed: a kill
#                                              replays when the same test,
#                                              run again on the mutant, fails
#   Test-Module: contrib/controller-runtime/sample
#                                              the module the test runs in
#                                              (default ENGINE's): an adapter's
#                                              mutant killed by a campaign
#   Tags: integration                          build tags of the test
#
# The script first runs each Killed-By test on the unpatched tree (it must
# pass), then each mutant without touching the tree: the patched files are
# written to a temporary directory and handed to `go test -overlay`. A mutant
# counts as killed only if its test alone, with its default flags (CI's
# schedule count), fails and prints a line
#
#   replay: go test ./ENGINE -run 'TestName$' -seed N
#
# whose command, run again on the mutant, fails too: a failure that does not
# replay is no kill. A test marked "Replay: rerun" is deterministic and
# prints no such line: its replay is the same test run again. A mutant that survives, no longer applies, touches a
# test file or a file outside ENGINE/, or does not build fails the script,
# naming itself. --refresh applies each patch to today's code (allowing moved
# lines) and rewrites it as a fresh diff, header kept, so whoever moves the
# code updates the mutants in the same commit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

refresh=false
if [ "${1:-}" = "--refresh" ]; then
  refresh=true
  shift
fi
if [ $# -ne 1 ]; then
  echo "usage: hack/mutants.sh [--refresh] ENGINE" >&2
  exit 2
fi
engine=${1%/}
dir=hack/mutants/$engine
# module is the Go module the mutants' tests run in, src the directory
# their patches may touch.
if [ -d "$engine" ]; then
  module=. src=$engine
elif [ -f "contrib/$engine/go.mod" ]; then
  module=contrib/$engine src=contrib/$engine
else
  echo "hack/mutants.sh: no package directory $engine/ nor module contrib/$engine/" >&2
  exit 2
fi
shopt -s nullglob
patches=("$dir"/*.patch)
if [ ${#patches[@]} -eq 0 ]; then
  echo "hack/mutants.sh: no mutants under $dir" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# header FIELD PATCH prints the value of the header line "FIELD: value".
header() {
  sed -n '/^diff --git /q; s/^'"$1"': *//p' "$2" | head -n 1
}

# files PATCH prints the paths the patch touches, one a line.
files() {
  git apply --numstat "$1" | cut -f3-
}

# check_paths PATCH fails unless every path is a non-test file under src.
check_paths() {
  local f bad=0
  while IFS= read -r f; do
    case "$f" in
      "$src"/*_test.go) echo "  touches a test file: $f" >&2; bad=1 ;;
      "$src"/*) ;;
      *) echo "  touches a file outside $src/: $f" >&2; bad=1 ;;
    esac
  done < <(files "$1")
  return $bad
}

# test_name PATCH and test_pkg PATCH split the Killed-By header into the
# test's name and its package (relative to the module).
test_name() { header Killed-By "$1" | awk '{print $1}'; }
test_pkg() {
  local pkg
  pkg=$(header Killed-By "$1" | awk '{print $2}')
  if [ -n "$pkg" ]; then
    echo "$pkg"
  elif [ "$module" = . ]; then
    echo "./$engine"
  else
    echo ./
  fi
}

# test_module PATCH and test_tags PATCH are the module the test runs in
# and its build tags.
test_module() {
  local m
  m=$(header Test-Module "$1")
  echo "${m:-$module}"
}
test_tags() { header Tags "$1"; }

# run_test OVERLAY NAME PKG MODULE TAGS runs one test in MODULE, on the
# mutant when OVERLAY names an overlay file.
run_test() {
  local overlay=() tags=()
  [ -n "$1" ] && overlay=(-overlay="$1")
  [ -n "$5" ] && tags=(-tags "$5")
  (cd "$4" && go test -count=1 "${tags[@]}" "${overlay[@]}" -run "^${2}\$" "$3")
}

# mutate PATCH OUT writes the patched copies of the files PATCH touches under
# OUT/tree, and OUT/overlay.json mapping each original path to its copy.
mutate() {
  local patch=$1 out=$2 f sep=""
  rm -rf "$out"
  mkdir -p "$out/tree"
  while IFS= read -r f; do
    if [ -e "$f" ]; then
      mkdir -p "$out/tree/$(dirname "$f")"
      cp "$f" "$out/tree/$f"
    fi
  done < <(files "$patch")
  (cd "$out/tree" && git apply --whitespace=nowarn "$root/$patch") || return 1
  {
    printf '{"Replace":{'
    while IFS= read -r f; do
      if [ -e "$out/tree/$f" ]; then
        printf '%s"%s":"%s"' "$sep" "$root/$f" "$out/tree/$f"
      else
        printf '%s"%s":""' "$sep" "$root/$f"
      fi
      sep=","
    done < <(files "$patch")
    printf '}}\n'
  } >"$out/overlay.json"
}

if $refresh; then
  status=0
  for patch in "${patches[@]}"; do
    name=$(basename "$patch" .patch)
    out=$work/$name
    mkdir -p "$out/a" "$out/b"
    while IFS= read -r f; do
      mkdir -p "$out/a/$(dirname "$f")" "$out/b/$(dirname "$f")"
      [ -e "$f" ] && cp "$f" "$out/a/$f" && cp "$f" "$out/b/$f"
    done < <(files "$patch")
    # patch(1) finds hunks whose lines moved; git apply would refuse them.
    if ! sed -n '/^diff --git /,$p' "$patch" | (cd "$out/b" && patch -s -p1 -F3 --no-backup-if-mismatch >"$out/patch.log" 2>&1); then
      echo "mutant $name: no longer applies, even with moved lines; write it again:" >&2
      cat "$out/patch.log" >&2
      status=1
      continue
    fi
    {
      sed -n '/^diff --git /q; p' "$patch"
      # The trees are named a and b, so their paths read as git's own.
      (cd "$out" && git diff --no-index --no-prefix a b || true)
    } >"$out/new.patch"
    mv "$out/new.patch" "$patch"
    echo "mutant $name: refreshed"
  done
  exit $status
fi

# Every Killed-By test passes on the unpatched tree.
declare -A tests=()
for patch in "${patches[@]}"; do
  name=$(basename "$patch" .patch)
  if [ -z "$(test_name "$patch")" ] || [ -z "$(header Bug "$patch")" ]; then
    echo "mutant $name: its header needs a Bug: and a Killed-By: line" >&2
    exit 1
  fi
  tests["$(test_name "$patch") $(test_pkg "$patch") $(test_module "$patch") $(test_tags "$patch")"]=1
done
for key in "${!tests[@]}"; do
  read -r test pkg mod tags <<<"$key"
  echo "== $engine: $test ($mod $pkg${tags:+, tags $tags}) on the unpatched tree"
  if ! run_test "" "$test" "$pkg" "$mod" "$tags" >"$work/unpatched.out" 2>&1; then
    cat "$work/unpatched.out" >&2
    echo "hack/mutants.sh: $test fails without any mutant; fix the code or the test first" >&2
    exit 1
  fi
done

survived=()
for patch in "${patches[@]}"; do
  name=$(basename "$patch" .patch)
  test=$(test_name "$patch")
  pkg=$(test_pkg "$patch")
  mod=$(test_module "$patch")
  tags=$(test_tags "$patch")
  out=$work/$name
  start=$(date +%s)
  if ! check_paths "$patch"; then
    survived+=("$name (touches files it must not)")
    echo "mutant $name: touches files it must not" >&2
    continue
  fi
  if ! mutate "$patch" "$out" 2>"$work/apply.err"; then
    cat "$work/apply.err" >&2
    survived+=("$name (no longer applies: run hack/mutants.sh --refresh $engine)")
    echo "mutant $name: no longer applies" >&2
    continue
  fi
  if run_test "$out/overlay.json" "$test" "$pkg" "$mod" "$tags" >"$out/test.out" 2>&1; then
    survived+=("$name (survived $test)")
    echo "mutant $name: SURVIVED $test — $(header Bug "$patch")" >&2
    continue
  fi
  if grep -qE '^(# |FAIL.*\[(build|setup) failed\])' "$out/test.out"; then
    sed -n '1,20p' "$out/test.out" >&2
    survived+=("$name (does not build)")
    echo "mutant $name: does not build" >&2
    continue
  fi
  replay=$(grep -m1 -oE 'replay: go test .*' "$out/test.out" | sed 's/^replay: go test //') || true
  if [ -z "$replay" ] && [ "$(header Replay "$patch")" = rerun ]; then
    replay="$pkg -run '^${test}\$'"
  fi
  if [ -z "$replay" ]; then
    sed -n '1,40p' "$out/test.out" >&2
    survived+=("$name (failed without a replay line)")
    echo "mutant $name: $test failed without printing a replay line" >&2
    continue
  fi
  tagflag=""
  [ -n "$tags" ] && tagflag="-tags $tags"
  if (cd "$mod" && eval "go test -count=1 $tagflag -overlay=\"$out/overlay.json\" $replay") >"$out/replay.out" 2>&1; then
    survived+=("$name (its failure did not replay: go test $replay)")
    echo "mutant $name: the failure did not replay: go test $replay" >&2
    continue
  fi
  echo "mutant $name: killed by $test in $(( $(date +%s) - start ))s (replay: go test $replay)"
done

if [ ${#survived[@]} -gt 0 ]; then
  echo "hack/mutants.sh: ${#survived[@]} of ${#patches[@]} $engine mutants not killed:" >&2
  printf '  %s\n' "${survived[@]}" >&2
  exit 1
fi
echo "hack/mutants.sh: all ${#patches[@]} $engine mutants killed"
