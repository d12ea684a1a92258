#!/usr/bin/env bash
# Cross-compiles ./cmd/nanobot for every release target with the release
# flags, without goreleaser: CI checks that each platform builds, in far less
# time than installing goreleaser takes (see .ci/run). The targets come from
# .goreleaser.yaml, the one list of them.
#
#   scripts/crossbuild.sh            # build all, discard the binaries
#   scripts/crossbuild.sh -o dist    # keep them as dist/nanobot_<target>[.exe]
#   scripts/crossbuild.sh -l         # only print the targets
set -euo pipefail
cd "$(dirname "$0")/.."

out=""
list=false
while getopts "o:l" opt; do
  case $opt in
    o) out=$OPTARG ;;
    l) list=true ;;
    *) echo "usage: $0 [-o dir] [-l]" >&2; exit 2 ;;
  esac
done

# The entries of the `targets:` list of the build: goos_goarch_variant.
targets=$(awk '
  /^[[:space:]]*targets:[[:space:]]*$/ { in_list = 1; next }
  in_list && /^[[:space:]]*-[[:space:]]/ { sub(/^[[:space:]]*-[[:space:]]*/, ""); sub(/[[:space:]]*(#.*)?$/, ""); print; next }
  in_list && /^[[:space:]]*(#.*)?$/ { next }
  in_list { exit }
' .goreleaser.yaml)
if [ -z "$targets" ]; then
  echo "crossbuild: no targets found in .goreleaser.yaml" >&2
  exit 1
fi
if $list; then
  echo "$targets"
  exit 0
fi
[ -n "$out" ] && mkdir -p "$out"

for t in $targets; do
  IFS=_ read -r goos goarch variant <<<"$t"
  env=(CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch")
  case $goarch in
    amd64) env+=(GOAMD64="$variant") ;;
    arm64) env+=(GOARM64="$variant") ;;
    arm) env+=(GOARM="$variant") ;;
  esac
  dest=/dev/null
  if [ -n "$out" ]; then
    dest="$out/nanobot_$t"
    [ "$goos" = windows ] && dest="$dest.exe"
  fi
  start=$SECONDS
  env "${env[@]}" go build -tags goolm -trimpath -ldflags "-s -w -X main.version=ci" -o "$dest" ./cmd/nanobot
  echo "crossbuild: $t ok ($((SECONDS - start)) s)"
done
