package main

import (
	"strings"
	"testing"
)

const goodDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: w
spec:
  selector:
    matchLabels: {app: w}
  template:
    metadata:
      labels: {app: w}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
        - name: c
          image: nanobot:1
          livenessProbe: {httpGet: {path: /healthz, port: 18790}}
          readinessProbe: {httpGet: {path: /readyz, port: 18790}}
          resources: {requests: {memory: 64Mi}}
          securityContext: {allowPrivilegeEscalation: false}
`

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, manifest, wantErr string
	}{
		{"good", goodDeployment + "---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selector: {app: w}, ports: [{port: 80}]}\n", ""},
		{"unknown field", strings.Replace(goodDeployment, "image:", "imagee: x\n          image:", 1), `unknown field "imagee"`},
		{"bad quantity", strings.Replace(goodDeployment, "64Mi", "64 megs", 1), "quantities must match"},
		{"unknown kind", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n", "not known to make"},
		{"selector misses the pods", strings.Replace(goodDeployment, "matchLabels: {app: w}", "matchLabels: {app: x}", 1), "does not match the pod template"},
		{"service selects nothing", goodDeployment + "---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selector: {app: nope}}\n", "picks no pods"},
		{"no probes", strings.Replace(goodDeployment, "readinessProbe:", "startupProbe:", 1), "no liveness or readiness probe"},
		{"root allowed", strings.Replace(goodDeployment, "runAsNonRoot: true", "runAsNonRoot: false", 1), "non-root"},
		{"keda field misspelt", goodDeployment + `---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: so}
spec:
  scaleTargetRef: {name: w}
  triggers:
    - type: nats-jetstream
      metadata: {natsServerMonitoringEndpoint: "n:8222", account: $G, stream: S, consumer: c, lagThreshold: "5", lagTreshold: "5"}
`, "lagTreshold is not a field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check([]byte(tc.manifest))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("got error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
