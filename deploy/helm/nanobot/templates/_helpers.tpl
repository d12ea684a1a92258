{{/* Names, labels and the pieces every nanobot pod shares. */}}

{{- define "nanobot.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "nanobot.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "nanobot.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "nanobot.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "nanobot.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "nanobot.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "nanobot.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nanobot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "nanobot.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nanobot.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "nanobot.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "nanobot.secretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else if .Values.secrets.values }}
{{- include "nanobot.fullname" . }}
{{- end }}
{{- end }}

{{/*
The NATS server of cluster mode: the bundled one (templates/nats.yaml) when
nats.enabled, else cluster.natsUrl. Both at once is a mistake (a server
nobody uses), neither leaves the pods nothing to connect to.
*/}}
{{- define "nanobot.natsUrl" -}}
{{- if and .Values.nats.enabled .Values.cluster.natsUrl }}
{{- fail "cluster.natsUrl is set and nats.enabled is true: for your own NATS server set nats.enabled=false; for the bundled one leave cluster.natsUrl empty" }}
{{- else if .Values.cluster.natsUrl }}
{{- .Values.cluster.natsUrl }}
{{- else if .Values.nats.enabled }}
{{- printf "nats://%s:4222" (include "nanobot.natsName" .) }}
{{- else }}
{{- fail "cluster mode needs a NATS server: set cluster.natsUrl to yours, or nats.enabled=true for the bundled one" }}
{{- end }}
{{- end }}

{{/*
The bundled NATS server's objects: <fullname>-nats, the headless Service
<fullname>-nats-headless. The full name is cut to 40 characters so that
these, and the StatefulSet's revision label (name plus 11), stay within
Kubernetes' 63.
*/}}
{{- define "nanobot.natsName" -}}
{{- printf "%s-nats" (include "nanobot.fullname" . | trunc 40 | trimSuffix "-") }}
{{- end }}

{{/*
The bundled NATS pods have a name label of their own, so that no nanobot
selector (the -pods Service, the PDB) picks them.
*/}}
{{- define "nanobot.natsSelectorLabels" -}}
app.kubernetes.io/name: nats
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: nats
{{- end }}

{{- define "nanobot.natsLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "nanobot.natsSelectorLabels" . }}
app.kubernetes.io/part-of: {{ include "nanobot.name" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The pod spec shared by the StatefulSet and both Deployments.
Call with (dict "root" $ "role" "all|channels|worker" "resources" $res "claim" $claimName).
*/}}
{{- define "nanobot.podSpec" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
serviceAccountName: {{ include "nanobot.serviceAccountName" $root }}
automountServiceAccountToken: {{ $v.serviceAccount.automount }}
securityContext:
  {{- toYaml $v.podSecurityContext | nindent 2 }}
terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
containers:
  - name: nanobot
    image: {{ include "nanobot.image" $root }}
    imagePullPolicy: {{ $v.image.pullPolicy }}
    args:
      - gateway
      - --config
      - {{ $v.dataDir }}/config.json
      {{- if ne .role "all" }}
      - --role
      - {{ .role }}
      {{- end }}
    ports:
      - name: http
        containerPort: {{ $v.service.port }}
        protocol: TCP
    env:
      - name: NANOBOT_GATEWAY__HOST
        value: "0.0.0.0"
      - name: NANOBOT_GATEWAY__PORT
        value: {{ $v.service.port | quote }}
      {{- if ne .role "all" }}
      - name: NANOBOT_CLUSTER__NATS__URL
        value: {{ include "nanobot.natsUrl" $root | quote }}
      - name: NANOBOT_CLUSTER__PREFIX
        value: {{ $v.cluster.prefix | quote }}
      - name: NANOBOT_CLUSTER__PARTITIONS
        value: {{ $v.cluster.partitions | quote }}
      {{- if $v.cluster.natsTokenSecret.name }}
      - name: NANOBOT_CLUSTER__NATS__TOKEN
        valueFrom:
          secretKeyRef:
            name: {{ $v.cluster.natsTokenSecret.name }}
            key: {{ $v.cluster.natsTokenSecret.key }}
      {{- end }}
      {{- end }}
      {{- with $v.extraEnv }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    {{- with include "nanobot.secretName" $root }}
    envFrom:
      - secretRef:
          name: {{ . }}
    {{- end }}
    startupProbe:
      httpGet:
        path: {{ $v.probes.startup.path }}
        port: http
      periodSeconds: {{ $v.probes.startup.periodSeconds }}
      failureThreshold: {{ $v.probes.startup.failureThreshold }}
    livenessProbe:
      httpGet:
        path: {{ $v.probes.liveness.path }}
        port: http
      periodSeconds: {{ $v.probes.liveness.periodSeconds }}
      failureThreshold: {{ $v.probes.liveness.failureThreshold }}
    readinessProbe:
      httpGet:
        path: {{ $v.probes.readiness.path }}
        port: http
      periodSeconds: {{ $v.probes.readiness.periodSeconds }}
      failureThreshold: {{ $v.probes.readiness.failureThreshold }}
    resources:
      {{- toYaml .resources | nindent 6 }}
    securityContext:
      {{- toYaml $v.securityContext | nindent 6 }}
    volumeMounts:
      - name: data
        mountPath: {{ $v.dataDir }}
      - name: config
        mountPath: {{ $v.dataDir }}/config.json
        subPath: config.json
        readOnly: true
      - name: tmp
        mountPath: /tmp
volumes:
  - name: config
    configMap:
      name: {{ include "nanobot.fullname" $root }}
  - name: tmp
    emptyDir: {}
  {{- if .claim }}
  - name: data
    persistentVolumeClaim:
      claimName: {{ .claim }}
  {{- else if not $v.persistence.enabled }}
  - name: data
    emptyDir: {}
  {{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Pod template metadata: a config checksum restarts the pods on a change. */}}
{{- define "nanobot.podMeta" -}}
{{- $root := .root -}}
annotations:
  checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
  {{- with $root.Values.podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
labels:
  {{- include "nanobot.selectorLabels" $root | nindent 2 }}
  app.kubernetes.io/component: {{ .component }}
  {{- with $root.Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
