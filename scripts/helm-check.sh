#!/usr/bin/env bash
# Lints and renders deploy/helm/nanobot as shipped — no `helm dependency
# build`, no network — in each mode (one node, cluster with your own NATS,
# cluster with the bundled NATS server, cluster with KEDA) and checks the
# rendered manifests with deploy/helm/check (strict decoding into the
# Kubernetes API types, the chart's promises, and where the NATS server is).
# Needs helm on PATH or in $HELM.
set -euo pipefail
cd "$(dirname "$0")/.."
helm=${HELM:-helm}
chart=deploy/helm/nanobot

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "helm-check: $*" >&2
  exit 1
}

# helm refuses to render a chart whose declared dependency is missing from
# charts/, whatever its condition, and a leftover charts/ folder would be
# rendered here but not shipped.
if grep -q '^dependencies:' "$chart/Chart.yaml"; then
  fail "$chart/Chart.yaml declares dependencies: the chart must install without \`helm dependency build\`"
fi
if [ -e "$chart/charts" ]; then
  fail "$chart/charts exists: the chart ships without one (remove it)"
fi

external_url=nats://nats.example:4222
declare -A cases=(
  [single]="--set mode=single --set image.repository=registry.example/nanobot --set image.tag=1.2.3 --set secrets.existingSecret=nanobot-keys"
  [single-nopvc]="--set mode=single --set persistence.enabled=false --set secrets.values.OPENROUTER_API_KEY=x"
  [cluster-external]="--set mode=cluster --set nats.enabled=false --set cluster.natsUrl=$external_url --set secrets.existingSecret=keys --set cluster.natsTokenSecret.name=nats-token"
  [cluster-bundled]="--set mode=cluster --set secrets.existingSecret=keys --set cluster.natsTokenSecret.name=nats-token"
  [cluster-keda]="--set mode=cluster --set keda.enabled=true"
)
for name in single single-nopvc cluster-external cluster-bundled cluster-keda; do
  # shellcheck disable=SC2086 # the case's flags split on purpose
  "$helm" lint --strict "$chart" ${cases[$name]} >"$work/lint.txt" || { cat "$work/lint.txt"; fail "lint failed: $name"; }
  # shellcheck disable=SC2086
  "$helm" template ci "$chart" ${cases[$name]} >"$work/$name.yaml"
done

# refused WHAT FLAGS... fails unless helm refuses to render with FLAGS.
refused() {
  local what=$1
  shift
  if "$helm" template ci "$chart" "$@" >/dev/null 2>"$work/err.txt"; then
    fail "rendered $what: $*"
  fi
}
# The values schema must refuse what it says it refuses.
refused "with mode=both" --set mode=both
refused "with a value meant for the official NATS chart" --set mode=cluster --set nats.config.cluster.enabled=true
# Cluster mode without any NATS server is an error, not a broken manifest,
# and so is a NATS URL next to the bundled server nobody would use.
refused "cluster mode without a NATS server" --set mode=cluster --set nats.enabled=false
grep -q 'cluster mode needs a NATS server' "$work/err.txt" || fail "no clear message for cluster mode without NATS: $(cat "$work/err.txt")"
refused "cluster mode with both cluster.natsUrl and nats.enabled" --set mode=cluster --set cluster.natsUrl=$external_url
refused "KEDA with your own NATS but no monitoring endpoint" --set mode=cluster --set nats.enabled=false --set cluster.natsUrl=$external_url --set keda.enabled=true

# The bundled NATS objects come with cluster mode and nats.enabled only, and
# then the nanobot pods (and KEDA) use them.
(cd deploy/helm/check && go build -o "$work/check" .)
"$work/check" -nats none "$work/single.yaml" "$work/single-nopvc.yaml"
"$work/check" -nats none -nats-url "$external_url" "$work/cluster-external.yaml"
"$work/check" -nats bundled -nats-url nats://ci-nanobot-nats:4222 "$work/cluster-bundled.yaml" "$work/cluster-keda.yaml"
