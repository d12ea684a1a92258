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
          ports: [{name: http, containerPort: 18790}]
          env: [{name: NANOBOT_CLUSTER__NATS__URL, value: "nats://n-nats:4222"}]
          livenessProbe: {httpGet: {path: /healthz, port: 18790}}
          readinessProbe: {httpGet: {path: /readyz, port: 18790}}
          resources: {requests: {memory: 64Mi}}
          securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`

const goodService = `---
apiVersion: v1
kind: Service
metadata: {name: s}
spec: {selector: {app: w}, ports: [{port: 80, targetPort: http}]}
`

// A NATS server as the chart bundles it: a StatefulSet of the nats image,
// its headless Service and its client Service.
const bundledNATS = `---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: n-nats, labels: {app.kubernetes.io/name: nats}}
spec:
  serviceName: n-nats-headless
  selector:
    matchLabels: {app: nats}
  template:
    metadata:
      labels: {app: nats}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
        - name: nats
          image: nats:2.12-alpine
          ports: [{name: nats, containerPort: 4222}, {name: monitor, containerPort: 8222}]
          livenessProbe: {httpGet: {path: /healthz, port: monitor}}
          readinessProbe: {httpGet: {path: /healthz, port: monitor}}
          resources: {requests: {memory: 64Mi}}
          securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
          volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Service
metadata: {name: n-nats-headless}
spec: {clusterIP: None, selector: {app: nats}, ports: [{port: 4222, targetPort: nats}]}
---
apiVersion: v1
kind: Service
metadata: {name: n-nats}
spec: {selector: {app: nats}, ports: [{name: nats, port: 4222, targetPort: nats}, {name: monitor, port: 8222, targetPort: monitor}]}
`

const scaledObject = `---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: so}
spec:
  scaleTargetRef: {name: w}
  triggers:
    - type: nats-jetstream
      metadata: {natsServerMonitoringEndpoint: "n-nats.default.svc:8222", account: $G, stream: S, consumer: c, lagThreshold: "5"}
`

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, manifest, wantErr string
		want                    Expect
	}{
		{name: "good", manifest: goodDeployment + goodService},
		{name: "unknown field", manifest: strings.Replace(goodDeployment, "image:", "imagee: x\n          image:", 1), wantErr: `unknown field "imagee"`},
		{name: "bad quantity", manifest: strings.Replace(goodDeployment, "64Mi", "64 megs", 1), wantErr: "quantities must match"},
		{name: "unknown kind", manifest: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n", wantErr: "not known to make"},
		{name: "selector misses the pods", manifest: strings.Replace(goodDeployment, "matchLabels: {app: w}", "matchLabels: {app: x}", 1), wantErr: "does not match the pod template"},
		{name: "service selects nothing", manifest: goodDeployment + "---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selector: {app: nope}}\n", wantErr: "picks no pods"},
		{name: "service port reaches no pod port", manifest: goodDeployment + strings.Replace(goodService, "targetPort: http", "targetPort: htp", 1), wantErr: `targets port name "htp", which no pod it selects has`},
		{name: "service port number reaches no pod port", manifest: goodDeployment + strings.Replace(goodService, "port: 80, targetPort: http", "port: 80", 1), wantErr: "port 80 targets port 80"},
		{name: "no probes", manifest: strings.Replace(goodDeployment, "readinessProbe:", "startupProbe:", 1), wantErr: "no liveness or readiness probe"},
		{name: "root allowed", manifest: strings.Replace(goodDeployment, "runAsNonRoot: true", "runAsNonRoot: false", 1), wantErr: "non-root"},
		{name: "root filesystem writable", manifest: strings.Replace(goodDeployment, "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", 1), wantErr: "root filesystem is writable"},
		{name: "capabilities kept", manifest: strings.Replace(goodDeployment, "drop: [ALL]", "drop: [NET_RAW]", 1), wantErr: "capabilities not all dropped"},
		{name: "statefulset without its headless service", manifest: goodDeployment + strings.Replace(bundledNATS, "clusterIP: None, ", "", 1), wantErr: `serviceName "n-nats-headless" is no headless Service`},
		{name: "keda field misspelt", manifest: goodDeployment + `---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: so}
spec:
  scaleTargetRef: {name: w}
  triggers:
    - type: nats-jetstream
      metadata: {natsServerMonitoringEndpoint: "n:8222", account: $G, stream: S, consumer: c, lagThreshold: "5", lagTreshold: "5"}
`, wantErr: "lagTreshold is not a field"},

		{name: "bundled", manifest: goodDeployment + bundledNATS + scaledObject, want: Expect{NATS: "bundled"}},
		{name: "bundled, mirrored image", manifest: goodDeployment + strings.Replace(bundledNATS, "image: nats:", "image: registry.example:5000/hub/nats:", 1), want: Expect{NATS: "bundled"}},
		{name: "bundled missing", manifest: goodDeployment, want: Expect{NATS: "bundled"}, wantErr: "want one StatefulSet running the nats image, got 0"},
		{name: "bundled, pods elsewhere", manifest: strings.Replace(goodDeployment, "nats://n-nats:4222", "nats://nats.example:4222", 1) + bundledNATS,
			want: Expect{NATS: "bundled"}, wantErr: "nats.example names no Service of the chart"},
		{name: "bundled, wrong port", manifest: strings.Replace(goodDeployment, "nats://n-nats:4222", "nats://n-nats:4223", 1) + bundledNATS,
			want: Expect{NATS: "bundled"}, wantErr: "is not nats://<service>:4222"},
		{name: "bundled, keda elsewhere", manifest: goodDeployment + bundledNATS + strings.Replace(scaledObject, "n-nats.default.svc:8222", "nats.example:8222", 1),
			want: Expect{NATS: "bundled"}, wantErr: "monitoring endpoint nats.example:8222 is not the bundled server's"},
		{name: "bundled, keda on the client port", manifest: goodDeployment + bundledNATS + strings.Replace(scaledObject, ":8222", ":4222", 1),
			want: Expect{NATS: "bundled"}, wantErr: "not on the monitoring port 8222"},
		{name: "none", manifest: goodDeployment + goodService, want: Expect{NATS: "none", NATSURL: "nats://n-nats:4222"}},
		{name: "none, but a NATS server", manifest: goodDeployment + bundledNATS, want: Expect{NATS: "none"}, wantErr: "StatefulSet n-nats runs the nats image"},
		{name: "another URL", manifest: goodDeployment, want: Expect{NATSURL: "nats://nats.example:4222"}, wantErr: "NATS URL nats://n-nats:4222, want nats://nats.example:4222"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check([]byte(tc.manifest), tc.want)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("got error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestIsNATSImage(t *testing.T) {
	for img, want := range map[string]bool{
		"nats": true, "nats:2.12-alpine": true, "docker.io/library/nats:2.12": true, "mirror:5000/nats@sha256:abc": true,
		"ghcr.io/nanobot-go/nanobot:1": false, "natsbox:1": false, "nats-box:0.14": false, "example/nats-exporter:1": false,
	} {
		if got := isNATSImage(img); got != want {
			t.Errorf("isNATSImage(%q) = %v, want %v", img, got, want)
		}
	}
}
