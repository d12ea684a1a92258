// Command check validates rendered Kubernetes manifests (the output of
// `helm template deploy/helm/nanobot`) without a cluster or a network.
//
// Every document is decoded strictly into the Kubernetes API's own Go types
// (k8s.io/api): an unknown or misspelt field, a wrong type or an unparsable
// quantity is an error, as the API server's strict field validation would
// report it. A kind the chart is not known to make is an error too, so a new
// kind gets a decoder here on purpose. Then the promises the chart makes are
// checked: non-root pods on a read-only root filesystem with no
// capabilities, probes and memory requests, selectors that match their pods,
// Service ports that reach a port of those pods, StatefulSets with their
// headless Service, a ScaledObject aimed at a Deployment. With -nats the
// render must hold the chart's own NATS server (bundled) or none, and with
// -nats-url every nanobot pod must get that URL.
//
// It is a module of its own so that k8s.io/api stays out of nanobot's
// go.mod. kubeconform would need JSON schemas downloaded from the internet,
// which CI cannot reach; the Go types are the source those schemas are
// generated from.
//
//	helm template x deploy/helm/nanobot > /tmp/x.yaml
//	(cd deploy/helm/check && go run . /tmp/x.yaml)
//	(cd deploy/helm/check && go run . -nats bundled /tmp/cluster.yaml)
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

func main() {
	var want Expect
	flag.StringVar(&want.NATS, "nats", "", "bundled: the chart's own NATS server, and the nanobot pods use it; none: no NATS server among the objects")
	flag.StringVar(&want.NATSURL, "nats-url", "", "the NATS URL every nanobot container must get")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: check [-nats bundled|none] [-nats-url URL] rendered.yaml...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 || !slices.Contains([]string{"", "bundled", "none"}, want.NATS) {
		flag.Usage()
		os.Exit(2)
	}
	failed := false
	for _, name := range flag.Args() {
		b, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		objs, err := Check(b, want)
		for _, e := range unwrap(err) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, e)
			failed = true
		}
		fmt.Printf("%s: %d objects checked\n", name, objs)
	}
	if failed {
		os.Exit(1)
	}
}

func unwrap(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// ScaledObject is the part of KEDA's keda.sh/v1alpha1 ScaledObject the chart
// writes (https://keda.sh/docs/latest/reference/scaledobject-spec/): KEDA
// ships no Go module small enough to import for it.
type ScaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion,omitempty"`
			Kind       string `json:"kind,omitempty"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicaCount *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount *int32 `json:"maxReplicaCount,omitempty"`
		PollingInterval *int32 `json:"pollingInterval,omitempty"`
		CooldownPeriod  *int32 `json:"cooldownPeriod,omitempty"`
		Triggers        []struct {
			Type     string            `json:"type"`
			Metadata map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
}

// kinds are the decoders, by apiVersion and kind.
var kinds = map[string]func() any{
	"v1/ConfigMap":                  func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                     func() any { return &corev1.Secret{} },
	"v1/Service":                    func() any { return &corev1.Service{} },
	"v1/ServiceAccount":             func() any { return &corev1.ServiceAccount{} },
	"v1/PersistentVolumeClaim":      func() any { return &corev1.PersistentVolumeClaim{} },
	"apps/v1/Deployment":            func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":           func() any { return &appsv1.StatefulSet{} },
	"policy/v1/PodDisruptionBudget": func() any { return &policyv1.PodDisruptionBudget{} },
	"keda.sh/v1alpha1/ScaledObject": func() any { return &ScaledObject{} },
}

// The trigger fields KEDA's nats-jetstream scaler reads
// (https://keda.sh/docs/latest/scalers/nats-jetstream/).
var jetstreamFields = map[string]bool{
	"natsServerMonitoringEndpoint": true, "account": true, "stream": true, "consumer": true,
	"lagThreshold": true, "activationLagThreshold": true, "useHttps": true,
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// Expect is what a render must hold beyond the chart's general promises.
type Expect struct {
	// NATS is "bundled": one StatefulSet runs the nats image, a Service
	// reaches its client port, and every nanobot container's NATS URL and
	// every KEDA trigger's monitoring endpoint name a Service of those
	// pods; "none": no workload runs the nats image and no object is
	// labelled app.kubernetes.io/name=nats; "": either.
	NATS string
	// NATSURL, if set, is the NATS URL every nanobot container must get.
	NATSURL string
}

// natsURLEnv is the environment variable that gives a nanobot container
// its NATS server (cluster.nats.url).
const natsURLEnv = "NANOBOT_CLUSTER__NATS__URL"

// Check decodes and checks every document of a rendered chart and returns
// how many objects it found.
func Check(rendered []byte, want Expect) (int, error) {
	var errs []error
	var objs []any
	for _, doc := range docSep.Split(string(rendered), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			errs = append(errs, fmt.Errorf("not a manifest: %w", err))
			continue
		}
		mk, ok := kinds[tm.APIVersion+"/"+tm.Kind]
		if !ok {
			errs = append(errs, fmt.Errorf("%s %s: a kind the chart is not known to make (add a decoder)", tm.APIVersion, tm.Kind))
			continue
		}
		obj := mk()
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", tm.Kind, nameOf(doc), err))
			continue
		}
		objs = append(objs, obj)
	}
	errs = append(errs, checkObjects(objs)...)
	errs = append(errs, checkNATS(objs, want)...)
	return len(objs), errors.Join(errs...)
}

func stripComments(doc string) string {
	var b bytes.Buffer
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func nameOf(doc string) string {
	var m struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	_ = yaml.Unmarshal([]byte(doc), &m)
	return m.Metadata.Name
}

type workload struct {
	kind, name string
	selector   *metav1.LabelSelector
	pod        corev1.PodTemplateSpec
	claims     []string // a StatefulSet's volume claim templates
	service    string   // a StatefulSet's serviceName
}

// workloads are the Deployments and StatefulSets among the objects.
func workloads(objs []any) []workload {
	var loads []workload
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			loads = append(loads, workload{kind: "Deployment", name: o.Name, selector: o.Spec.Selector, pod: o.Spec.Template})
		case *appsv1.StatefulSet:
			w := workload{kind: "StatefulSet", name: o.Name, selector: o.Spec.Selector, pod: o.Spec.Template, service: o.Spec.ServiceName}
			for _, c := range o.Spec.VolumeClaimTemplates {
				w.claims = append(w.claims, c.Name)
			}
			loads = append(loads, w)
		}
	}
	return loads
}

// selected are the workloads whose pods a Service picks.
func selected(loads []workload, svc *corev1.Service) []workload {
	var out []workload
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	for _, w := range loads {
		if sel.Matches(labels.Set(w.pod.Labels)) {
			out = append(out, w)
		}
	}
	return out
}

// reachesPod reports whether a Service port's target (a port name, a
// number, or the port itself) is a container port of one of the workloads.
func reachesPod(p corev1.ServicePort, loads []workload) bool {
	for _, w := range loads {
		for _, c := range w.pod.Spec.Containers {
			for _, cp := range c.Ports {
				switch {
				case p.TargetPort.Type == intstr.String:
					if cp.Name == p.TargetPort.StrVal {
						return true
					}
				case p.TargetPort.IntVal != 0:
					if cp.ContainerPort == p.TargetPort.IntVal {
						return true
					}
				case cp.ContainerPort == p.Port:
					return true
				}
			}
		}
	}
	return false
}

func targetOf(p corev1.ServicePort) string {
	switch {
	case p.TargetPort.Type == intstr.String:
		return fmt.Sprintf("port name %q", p.TargetPort.StrVal)
	case p.TargetPort.IntVal != 0:
		return fmt.Sprintf("port %d", p.TargetPort.IntVal)
	}
	return fmt.Sprintf("port %d", p.Port)
}

func checkObjects(objs []any) []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	loads := workloads(objs)
	for _, o := range objs {
		if sts, ok := o.(*appsv1.StatefulSet); ok && sts.Spec.ServiceName == "" {
			add("StatefulSet %s: no serviceName", sts.Name)
		}
		if m, ok := o.(metav1.Object); ok && m.GetName() == "" {
			add("%T: no metadata.name", o)
		}
	}
	// matches reports whether a selector picks the pods of some workload.
	matches := func(sel labels.Selector) bool {
		for _, w := range loads {
			if sel.Matches(labels.Set(w.pod.Labels)) {
				return true
			}
		}
		return false
	}
	for _, w := range loads {
		errs = append(errs, checkWorkload(w)...)
	}
	services := map[string]*corev1.Service{}
	for _, o := range objs {
		if svc, ok := o.(*corev1.Service); ok {
			services[svc.Name] = svc
		}
	}
	for _, w := range loads {
		if w.kind != "StatefulSet" || w.service == "" {
			continue
		}
		if svc := services[w.service]; svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone {
			add("StatefulSet %s: serviceName %q is no headless Service of the chart", w.name, w.service)
		}
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Service:
			if len(o.Spec.Selector) == 0 || !matches(labels.SelectorFromSet(o.Spec.Selector)) {
				add("Service %s: its selector %v picks no pods of the chart", o.Name, o.Spec.Selector)
				continue
			}
			for _, p := range o.Spec.Ports {
				if !reachesPod(p, selected(loads, o)) {
					add("Service %s: port %d targets %s, which no pod it selects has", o.Name, p.Port, targetOf(p))
				}
			}
		case *policyv1.PodDisruptionBudget:
			sel, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
			if err != nil || sel.Empty() || !matches(sel) {
				add("PodDisruptionBudget %s: its selector picks no pods of the chart", o.Name)
			}
			if (o.Spec.MinAvailable == nil) == (o.Spec.MaxUnavailable == nil) {
				add("PodDisruptionBudget %s: set exactly one of minAvailable and maxUnavailable", o.Name)
			}
		case *ScaledObject:
			found := false
			for _, w := range loads {
				found = found || (w.kind == "Deployment" && w.name == o.Spec.ScaleTargetRef.Name)
			}
			if !found {
				add("ScaledObject %s: scaleTargetRef %q is no Deployment of the chart", o.Name, o.Spec.ScaleTargetRef.Name)
			}
			if len(o.Spec.Triggers) == 0 {
				add("ScaledObject %s: no triggers", o.Name)
			}
			for i, t := range o.Spec.Triggers {
				if t.Type != "nats-jetstream" {
					continue
				}
				for k := range t.Metadata {
					if !jetstreamFields[k] {
						add("ScaledObject %s: triggers[%d].metadata.%s is not a field of the nats-jetstream scaler", o.Name, i, k)
					}
				}
				for _, k := range []string{"natsServerMonitoringEndpoint", "account", "stream", "consumer", "lagThreshold"} {
					if t.Metadata[k] == "" {
						add("ScaledObject %s: triggers[%d].metadata.%s is empty", o.Name, i, k)
					}
				}
			}
		}
	}
	return errs
}

func checkWorkload(w workload) []error {
	var errs []error
	add := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s %s: "+format, append([]any{w.kind, w.name}, a...)...))
	}
	sel, err := metav1.LabelSelectorAsSelector(w.selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(w.pod.Labels)) {
		add("spec.selector does not match the pod template's labels %v", w.pod.Labels)
	}
	ps := w.pod.Spec
	if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
		add("the pod does not require a non-root user (securityContext.runAsNonRoot)")
	}
	volumes := map[string]bool{}
	for _, v := range ps.Volumes {
		volumes[v.Name] = true
	}
	for _, c := range ps.Containers {
		if c.Image == "" {
			add("container %s: no image", c.Name)
		}
		if c.LivenessProbe == nil || c.ReadinessProbe == nil {
			add("container %s: no liveness or readiness probe", c.Name)
		}
		if _, ok := c.Resources.Requests[corev1.ResourceMemory]; !ok {
			add("container %s: no memory request", c.Name)
		}
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			add("container %s: privilege escalation allowed", c.Name)
		}
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			add("container %s: the root filesystem is writable (securityContext.readOnlyRootFilesystem)", c.Name)
		}
		if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			add("container %s: capabilities not all dropped (securityContext.capabilities.drop: [ALL])", c.Name)
		}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] && !slices.Contains(w.claims, m.Name) {
				add("container %s: mounts %q, which is no volume of the pod", c.Name, m.Name)
			}
		}
	}
	return errs
}

// isNATSImage reports whether an image is the NATS server's: its
// repository's last element is "nats" (nats:2.12-alpine,
// docker.io/library/nats@sha256:…, a mirror's …/nats:2.12).
func isNATSImage(image string) bool {
	repo, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return repo == "nats" || strings.HasSuffix(repo, "/nats")
}

// checkNATS holds the render to want: where the NATS server is and which
// one the nanobot pods use.
func checkNATS(objs []any, want Expect) []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	var (
		loads     = workloads(objs)
		natsLoads []workload
		services  []*corev1.Service
		endpoints []string // each nats-jetstream trigger's monitoring endpoint
		labelled  []string // objects labelled as NATS's
	)
	for _, o := range objs {
		if m, ok := o.(metav1.Object); ok && m.GetLabels()["app.kubernetes.io/name"] == "nats" {
			kind := fmt.Sprintf("%T", o)
			labelled = append(labelled, kind[strings.LastIndex(kind, ".")+1:]+" "+m.GetName())
		}
		switch o := o.(type) {
		case *corev1.Service:
			services = append(services, o)
		case *ScaledObject:
			for _, t := range o.Spec.Triggers {
				if t.Type == "nats-jetstream" {
					endpoints = append(endpoints, t.Metadata["natsServerMonitoringEndpoint"])
				}
			}
		}
	}
	type natsURL struct{ load, url string }
	var found []natsURL
	for _, w := range loads {
		isNATS := false
		for _, c := range w.pod.Spec.Containers {
			isNATS = isNATS || isNATSImage(c.Image)
			for _, e := range c.Env {
				if e.Name == natsURLEnv {
					found = append(found, natsURL{w.kind + " " + w.name, e.Value})
				}
			}
		}
		if isNATS {
			natsLoads = append(natsLoads, w)
		}
	}
	if want.NATSURL != "" {
		if len(found) == 0 {
			add("no nanobot container gets a NATS URL (%s), want %s", natsURLEnv, want.NATSURL)
		}
		for _, u := range found {
			if u.url != want.NATSURL {
				add("%s: NATS URL %s, want %s", u.load, u.url, want.NATSURL)
			}
		}
	}
	switch want.NATS {
	case "none":
		for _, w := range natsLoads {
			add("%s %s runs the nats image, but no NATS server was expected", w.kind, w.name)
		}
		for _, l := range labelled {
			add("%s is labelled app.kubernetes.io/name=nats, but no NATS server was expected", l)
		}
	case "bundled":
		if len(natsLoads) != 1 || natsLoads[0].kind != "StatefulSet" {
			add("want one StatefulSet running the nats image, got %d workloads running it", len(natsLoads))
			return errs
		}
		nats := natsLoads[0]
		// natsService says why host:port is not a port of a Service of
		// the NATS pods, "" if it is. The host's first label is the
		// Service's name (name, name.namespace, name.namespace.svc…).
		natsService := func(hostport string) string {
			host, port, err := net.SplitHostPort(hostport)
			if err != nil {
				return fmt.Sprintf("%q is no host:port", hostport)
			}
			name, _, _ := strings.Cut(host, ".")
			for _, svc := range services {
				if svc.Name != name {
					continue
				}
				if len(selected([]workload{nats}, svc)) == 0 {
					return fmt.Sprintf("Service %s does not select the pods of StatefulSet %s", name, nats.name)
				}
				for _, p := range svc.Spec.Ports {
					if strconv.Itoa(int(p.Port)) == port {
						return ""
					}
				}
				return fmt.Sprintf("Service %s has no port %s", name, port)
			}
			return fmt.Sprintf("%s names no Service of the chart", host)
		}
		if len(found) == 0 {
			add("no nanobot container gets a NATS URL (%s)", natsURLEnv)
		}
		for _, u := range found {
			p, err := url.Parse(u.url)
			if err != nil || p.Scheme != "nats" || p.Port() != "4222" {
				add("%s: NATS URL %q is not nats://<service>:4222", u.load, u.url)
				continue
			}
			if why := natsService(p.Host); why != "" {
				add("%s: NATS URL %s is not the bundled server: %s", u.load, u.url, why)
			}
		}
		for _, e := range endpoints {
			if why := natsService(e); why != "" {
				add("ScaledObject: monitoring endpoint %s is not the bundled server's: %s", e, why)
			} else if _, port, _ := net.SplitHostPort(e); port != "8222" {
				add("ScaledObject: monitoring endpoint %s is not on the monitoring port 8222", e)
			}
		}
	}
	return errs
}
