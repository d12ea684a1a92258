// Command check validates rendered Kubernetes manifests (the output of
// `helm template deploy/helm/nanobot`) without a cluster or a network.
//
// Every document is decoded strictly into the Kubernetes API's own Go types
// (k8s.io/api): an unknown or misspelt field, a wrong type or an unparsable
// quantity is an error, as the API server's strict field validation would
// report it. A kind the chart is not known to make is an error too, so a new
// kind gets a decoder here on purpose. Then the promises the chart makes are
// checked: non-root pods with probes and memory requests, selectors that
// match their pods, a ScaledObject aimed at a Deployment.
//
// It is a module of its own so that k8s.io/api stays out of nanobot's
// go.mod. kubeconform would need JSON schemas downloaded from the internet,
// which CI cannot reach; the Go types are the source those schemas are
// generated from.
//
//	helm template x deploy/helm/nanobot > /tmp/x.yaml
//	(cd deploy/helm/check && go run . /tmp/x.yaml)
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: check rendered.yaml...")
		os.Exit(2)
	}
	failed := false
	for _, name := range os.Args[1:] {
		b, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		objs, err := Check(b)
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

// Check decodes and checks every document of a rendered chart and returns
// how many objects it found.
func Check(rendered []byte) (int, error) {
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
}

func checkObjects(objs []any) []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	var loads []workload
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			loads = append(loads, workload{kind: "Deployment", name: o.Name, selector: o.Spec.Selector, pod: o.Spec.Template})
		case *appsv1.StatefulSet:
			w := workload{kind: "StatefulSet", name: o.Name, selector: o.Spec.Selector, pod: o.Spec.Template}
			for _, c := range o.Spec.VolumeClaimTemplates {
				w.claims = append(w.claims, c.Name)
			}
			loads = append(loads, w)
			if o.Spec.ServiceName == "" {
				add("StatefulSet %s: no serviceName", o.Name)
			}
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
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Service:
			if len(o.Spec.Selector) == 0 || !matches(labels.SelectorFromSet(o.Spec.Selector)) {
				add("Service %s: its selector %v picks no pods of the chart", o.Name, o.Spec.Selector)
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
		if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			add("container %s: privilege escalation allowed", c.Name)
		}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] && !slices.Contains(w.claims, m.Name) {
				add("container %s: mounts %q, which is no volume of the pod", c.Name, m.Name)
			}
		}
	}
	return errs
}
