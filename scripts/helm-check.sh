#!/usr/bin/env bash
# Lints and renders deploy/helm/nanobot in both modes (and with KEDA) and
# checks the rendered manifests with deploy/helm/check (strict decoding into
# the Kubernetes API types; no cluster, no network). Needs helm on PATH or in
# $HELM.
#
# The official NATS chart is a dependency that `helm dependency build`
# fetches from its repository, which CI cannot reach, and helm refuses to
# render a chart whose declared dependency is missing even when its
# condition is off. So the checks run on a copy of the chart without that
# dependency entry, with nats.enabled=false and an external NATS URL; the
# subchart's own manifests are the NATS project's to test.
set -euo pipefail
cd "$(dirname "$0")/.."
helm=${HELM:-helm}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r deploy/helm/nanobot "$work/nanobot"
# Drop the `dependencies:` block (it is the last one in Chart.yaml).
sed -i '/^dependencies:/,$d' "$work/nanobot/Chart.yaml"
chart=$work/nanobot

external=(--set nats.enabled=false --set cluster.natsUrl=nats://nats.example:4222)
declare -A cases=(
  [single]="--set mode=single"
  [single-nopvc]="--set mode=single --set persistence.enabled=false --set secrets.values.OPENROUTER_API_KEY=x"
  [cluster]="--set mode=cluster --set secrets.existingSecret=keys --set cluster.natsTokenSecret.name=nats-token"
  [cluster-keda]="--set mode=cluster --set keda.enabled=true --set keda.natsServerMonitoringEndpoint=nats.example:8222"
)
for name in single single-nopvc cluster cluster-keda; do
  # shellcheck disable=SC2086 # the case's flags split on purpose
  "$helm" lint --strict "$chart" "${external[@]}" ${cases[$name]} >"$work/lint.txt" || { cat "$work/lint.txt"; exit 1; }
  # shellcheck disable=SC2086
  "$helm" template ci "$chart" "${external[@]}" ${cases[$name]} >"$work/$name.yaml"
done

# The values schema must refuse what it says it refuses.
if "$helm" template ci "$chart" "${external[@]}" --set mode=both >/dev/null 2>&1; then
  echo "helm-check: values.schema.json accepted mode=both" >&2
  exit 1
fi
# Cluster mode without any NATS server is an error, not a broken manifest.
if "$helm" template ci "$chart" --set mode=cluster --set nats.enabled=false >/dev/null 2>&1; then
  echo "helm-check: cluster mode rendered without a NATS URL" >&2
  exit 1
fi

(cd deploy/helm/check && go run . "$work"/single.yaml "$work"/single-nopvc.yaml "$work"/cluster.yaml "$work"/cluster-keda.yaml)
