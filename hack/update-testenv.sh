#!/usr/bin/env bash
# Changes the versions of etcd and kube-apiserver that package testenv builds.
# The build module is embedded in testenv/tools as text files (go.mod.txt,
# go.sum.txt, etcd/main.go.txt, and tools.go.txt, which keeps kube-apiserver
# required); this script writes it to a temporary directory, runs
# `go get ARGS...` and `go mod tidy` there, and copies go.mod and go.sum back.
# Name every k8s.io staging module at the matching version, since
# k8s.io/kubernetes requires them at v0.0.0:
#
#   hack/update-testenv.sh k8s.io/kubernetes@v1.37.3 k8s.io/api@v0.37.3 ...
#
# A new version changes the cache key of the binaries, which
# TestVersionKeyIsTheBuildModulesDigest pins: the script runs it and it prints
# the new key to write into testenv/binaries_test.go.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  sed -n '2,16s/^# \{0,1\}//p' "$0" >&2
  exit 2
fi
tools=testenv/tools
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/etcd"
cp "$tools/go.mod.txt" "$tmp/go.mod"
cp "$tools/go.sum.txt" "$tmp/go.sum"
cp "$tools/etcd/main.go.txt" "$tmp/etcd/main.go"
cp "$tools/tools.go.txt" "$tmp/tools.go"
(cd "$tmp" && GOWORK=off go get "$@" && GOWORK=off go mod tidy)
cp "$tmp/go.mod" "$tools/go.mod.txt"
cp "$tmp/go.sum" "$tools/go.sum.txt"
go test -count=1 -run '^TestVersionKeyIsTheBuildModulesDigest$' ./testenv
