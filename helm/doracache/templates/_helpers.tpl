{{/*
Names and labels, following `helm create`.
*/}}

{{/* The chart name, truncated to the 63 characters a DNS label allows. */}}
{{- define "doracache.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The resource name prefix: <release>-<chart>, or the release name when it contains the chart name. */}}
{{- define "doracache.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The helm.sh/chart label value. */}}
{{- define "doracache.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "doracache.labels" -}}
helm.sh/chart: {{ include "doracache.chart" . }}
{{ include "doracache.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: doracache
{{- end }}

{{/* Labels that select the worker pods; never change them (a DaemonSet selector is immutable). */}}
{{- define "doracache.selectorLabels" -}}
app.kubernetes.io/name: {{ include "doracache.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "doracache.configMapName" -}}
{{- printf "%s-config" (include "doracache.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "doracache.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "doracache.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "doracache.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}

{{/*
Modes.
*/}}

{{/* "daemonset" or "sidecar"; anything else stops the render. */}}
{{- define "doracache.mode" -}}
{{- if not (has .Values.mode (list "daemonset" "sidecar")) }}
{{- fail (printf "mode must be \"daemonset\" or \"sidecar\", not %q" (toString .Values.mode)) }}
{{- end }}
{{- .Values.mode }}
{{- end }}

{{/* "true" in sidecar mode, "" otherwise (templates return strings). */}}
{{- define "doracache.isSidecar" -}}
{{- if eq (include "doracache.mode" .) "sidecar" }}true{{ end }}
{{- end }}

{{/*
Site properties.
*/}}

{{/* A property value as the worker reads it: whole numbers without an exponent (YAML numbers
arrive as float64, which Go prints as 1e+06), booleans as true/false. */}}
{{- define "doracache.propertyValue" -}}
{{- if and (kindIs "float64" .) (eq (. | int64 | float64) .) }}
{{- . | int64 }}
{{- else }}
{{- toString . }}
{{- end }}
{{- end }}

{{/* The effective site properties as YAML (key: string value): the keys the chart derives from
its other values, overridden by .Values.properties; null and empty values are dropped. Stops the
render on a secret key or a port that disagrees with worker.port. */}}
{{- define "doracache.properties" -}}
{{- $bindHost := ternary "127.0.0.1" "0.0.0.0" (eq (include "doracache.isSidecar" .) "true") }}
{{- /* The metastore is a directory inside its volume, not the mount point: the worker locks it
with a file beside it (.rocksdb.lock), which the read-only root filesystem would refuse. */}}
{{- $derived := dict
  "dora.worker.http.bind.host" $bindHost
  "dora.worker.http.port" (include "doracache.propertyValue" .Values.worker.port)
  "dora.worker.page.store.dirs" .Values.storage.pages.mountPath
  "dora.worker.metastore.rocksdb.dir" (printf "%s/rocksdb" .Values.storage.metastore.mountPath)
  "dora.work.dir" .Values.storage.workDir }}
{{- $derived = merge $derived (include "doracache.tlsProperties" . | fromYaml) }}
{{- with .Values.cluster }}
{{- if .etcd.endpoints }}
{{- if eq (include "doracache.isSidecar" $) "true" }}
{{- fail "cluster.etcd.endpoints needs mode: daemonset (a sidecar worker listens on loopback, which other pods cannot reach)" }}
{{- end }}
{{- $_ := set $derived "dora.cluster.etcd.endpoints" .etcd.endpoints }}
{{- $_ := set $derived "dora.cluster.name" .name }}
{{- end }}
{{- end }}
{{- $user := .Values.properties | default dict }}
{{- range $key := list "dora.worker.security.token" "dora.ufs.s3.access.key.id" "dora.ufs.s3.secret.access.key" }}
{{- if get $user $key }}
{{- fail (printf "properties.%s would put a secret in a ConfigMap; set auth.* or s3.* instead" $key) }}
{{- end }}
{{- end }}
{{- $result := dict }}
{{- range $key, $value := merge (deepCopy $derived) $user }}
{{- if contains "\n" $key }}
{{- fail (printf "property key %q contains a newline" $key) }}
{{- end }}
{{- $user_value := hasKey $user $key }}
{{- $chosen := ternary (get $user $key) (get $derived $key) $user_value }}
{{- if not (kindIs "invalid" $chosen) }}
{{- $text := include "doracache.propertyValue" $chosen | trim }}
{{- if contains "\n" $text }}
{{- fail (printf "properties.%s contains a newline" $key) }}
{{- end }}
{{- if ne $text "" }}
{{- $_ := set $result $key $text }}
{{- end }}
{{- end }}
{{- end }}
{{- $port := get $result "dora.worker.http.port" }}
{{- if ne $port (include "doracache.propertyValue" .Values.worker.port) }}
{{- fail (printf "properties.dora.worker.http.port (%s) differs from worker.port (%s); set worker.port only" $port (include "doracache.propertyValue" .Values.worker.port)) }}
{{- end }}
{{- toYaml $result }}
{{- end }}

{{/* The body of dora-site.properties, one key=value per line, sorted. */}}
{{- define "doracache.siteProperties" -}}
{{- $props := include "doracache.properties" . | fromYaml }}
# dora-site.properties rendered by the doracache Helm chart (release {{ .Release.Name }}).
# Edit the chart's `properties` value instead of this file.
{{- range $key := keys $props | sortAlpha }}
{{ $key }}={{ get $props $key }}
{{- end }}
{{- end }}

{{/* "true" when the worker listens on loopback only: the kubelet, which probes the pod IP,
cannot reach it, so the probes run inside the container instead. */}}
{{- define "doracache.loopbackOnly" -}}
{{- $host := get (include "doracache.properties" . | fromYaml) "dora.worker.http.bind.host" }}
{{- if or (hasPrefix "127." $host) (has $host (list "localhost" "::1")) }}true{{ end }}
{{- end }}

{{/*
The worker container, shared by the DaemonSet and the executor pod template.
*/}}

{{- define "doracache.confDir" -}}/etc/doracache{{- end }}

{{/* One probe handler; call with (dict "ctx" $ "path" "/healthz"). The kubelet's HTTPS probes
neither verify the certificate nor present one, so with mutual TLS the probe runs inside the
container too, presenting the worker's own certificate. */}}
{{- define "doracache.probeHandler" -}}
{{- $tls := .ctx.Values.tls }}
{{- if or (eq (include "doracache.loopbackOnly" .ctx) "true") (include "doracache.mutualTls" .ctx) }}
exec:
  command:
    - python3
    - {{ include "doracache.confDir" .ctx }}/probe.py
    - {{ include "doracache.propertyValue" .ctx.Values.worker.port | quote }}
    - {{ .path }}
    {{- if $tls.enabled }}
    - https
    {{- end }}
    {{- if include "doracache.mutualTls" .ctx }}
    - {{ printf "%s/tls.crt" $tls.mountPath }}
    - {{ printf "%s/tls.key" $tls.mountPath }}
    {{- end }}
{{- else }}
httpGet:
  path: {{ .path }}
  port: dora-http
  {{- if $tls.enabled }}
  scheme: HTTPS
  {{- end }}
{{- end }}
{{- end }}

{{/* Environment variables carrying the secrets: DORA_ + key upper-cased, dots to underscores
(DORA_WORKER_SECURITY_TOKEN sets dora.worker.security.token). */}}
{{- define "doracache.secretEnv" -}}
{{- include "doracache.tokenEnv" (dict "root" . "name" "DORA_WORKER_SECURITY_TOKEN") }}
{{- include "doracache.s3Env" . }}
{{- end }}

{{/* "true" when the chart generates the token: none is given and the worker listens beyond
loopback (see auth.generate). */}}
{{- define "doracache.generateToken" -}}
{{- $auth := .Values.auth }}
{{- if and $auth.generate (not $auth.token) (not $auth.existingSecret) (ne (include "doracache.loopbackOnly" .) "true") }}true{{ end }}
{{- end }}

{{/* Where the token in force lives, as YAML {name, key}; empty when the worker runs without one. */}}
{{- define "doracache.tokenRef" -}}
{{- $auth := .Values.auth }}
{{- if $auth.existingSecret }}
name: {{ $auth.existingSecret }}
key: {{ $auth.existingSecretKey }}
{{- else if or $auth.token (include "doracache.generateToken" .) }}
name: {{ include "doracache.fullname" . }}
key: token
{{- end }}
{{- end }}

{{/* The token the chart's Secret holds: auth.token; else, when generating, the token already in
the release's Secret (so it survives upgrades and executors keep working), else a new random one.
`lookup` answers nothing outside a real install or upgrade (helm template, --dry-run=client). */}}
{{- define "doracache.secretToken" -}}
{{- if .Values.auth.token }}
{{- .Values.auth.token | toString }}
{{- else }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "doracache.fullname" .) }}
{{- $data := (get ($existing | default dict) "data") | default dict }}
{{- if get $data "token" }}
{{- get $data "token" | b64dec }}
{{- else }}
{{- randAlphaNum 48 }}
{{- end }}
{{- end }}
{{- end }}

{{/* The token from its Secret, as env var "name": DORA_WORKER_SECURITY_TOKEN for the worker
(what it checks), DORA_USER_CLIENT_TOKEN for clients (what they send). */}}
{{- define "doracache.tokenEnv" -}}
{{- with include "doracache.tokenRef" .root | fromYaml }}
- name: {{ $.name }}
  valueFrom:
    secretKeyRef:
      name: {{ .name }}
      key: {{ .key }}
{{- end }}
{{- end }}

{{- define "doracache.s3Env" -}}
{{- $fullname := include "doracache.fullname" . }}
{{- if .Values.s3.existingSecret }}
- name: DORA_UFS_S3_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .Values.s3.existingSecret }}
      key: {{ .Values.s3.accessKeyIdKey }}
- name: DORA_UFS_S3_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.s3.existingSecret }}
      key: {{ .Values.s3.secretAccessKeyKey }}
{{- else if or .Values.s3.accessKeyId .Values.s3.secretAccessKey }}
{{- if not (and .Values.s3.accessKeyId .Values.s3.secretAccessKey) }}
{{- fail "s3.accessKeyId and s3.secretAccessKey must be set together" }}
{{- end }}
- name: DORA_UFS_S3_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ $fullname }}
      key: s3-access-key-id
- name: DORA_UFS_S3_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $fullname }}
      key: s3-secret-access-key
{{- end }}
{{- end }}

{{/* Volume type of a storage entry; call with (dict "ctx" $ "volume" .Values.storage.pages). */}}
{{- define "doracache.storageType" -}}
{{- $default := ternary "emptyDir" "hostPath" (eq (include "doracache.isSidecar" .ctx) "true") }}
{{- $type := .volume.type | default $default }}
{{- if not (has $type (list "hostPath" "emptyDir" "ephemeral")) }}
{{- fail (printf "storage type must be hostPath, emptyDir or ephemeral, not %q" $type) }}
{{- end }}
{{- $type }}
{{- end }}

{{/* The source of one storage volume; same arguments as doracache.storageType. */}}
{{- define "doracache.storageSource" -}}
{{- $type := include "doracache.storageType" . }}
{{- if eq $type "hostPath" }}
hostPath:
  path: {{ .volume.hostPath }}
  type: DirectoryOrCreate
{{- else if eq $type "emptyDir" }}
{{- if .volume.sizeLimit }}
emptyDir:
  sizeLimit: {{ .volume.sizeLimit }}
{{- else }}
emptyDir: {}
{{- end }}
{{- else }}
ephemeral:
  volumeClaimTemplate:
    metadata:
      labels:
        {{- include "doracache.labels" .ctx | nindent 8 }}
    spec:
      accessModes:
        - ReadWriteOnce
      {{- with .volume.storageClassName }}
      storageClassName: {{ . }}
      {{- end }}
      resources:
        requests:
          storage: {{ .volume.size }}
{{- end }}
{{- end }}

{{/* The volumes the worker needs (config, pages, metastore, scratch). */}}
{{- define "doracache.volumes" -}}
- name: doracache-config
  configMap:
    name: {{ include "doracache.configMapName" . }}
- name: doracache-pages
  {{- include "doracache.storageSource" (dict "ctx" . "volume" .Values.storage.pages) | trim | nindent 2 }}
- name: doracache-metastore
  {{- include "doracache.storageSource" (dict "ctx" . "volume" .Values.storage.metastore) | trim | nindent 2 }}
- name: doracache-work
  emptyDir: {}
- name: doracache-tmp
  emptyDir: {}
{{- include "doracache.tlsVolume" . }}
{{- end }}

{{/* The init container that hands hostPath directories to the worker's user, if any is needed. */}}
{{- define "doracache.volumePermissions" -}}
{{- $dirs := list }}
{{- if eq (include "doracache.storageType" (dict "ctx" . "volume" .Values.storage.pages)) "hostPath" }}
{{- $dirs = append $dirs .Values.storage.pages.mountPath }}
{{- end }}
{{- if eq (include "doracache.storageType" (dict "ctx" . "volume" .Values.storage.metastore)) "hostPath" }}
{{- $dirs = append $dirs .Values.storage.metastore.mountPath }}
{{- end }}
{{- if and .Values.volumePermissions.enabled $dirs }}
{{- $user := .Values.worker.securityContext.runAsUser | default 10001 }}
{{- $group := .Values.worker.securityContext.runAsGroup | default $user }}
- name: volume-permissions
  image: {{ include "doracache.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  command:
    - chown
    - {{ printf "%s:%s" (include "doracache.propertyValue" $user) (include "doracache.propertyValue" $group) | quote }}
    {{- range $dirs }}
    - {{ . }}
    {{- end }}
  resources:
    {{- toYaml .Values.volumePermissions.resources | nindent 4 }}
  securityContext:
    runAsUser: 0
    runAsNonRoot: false
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop:
        - ALL
      add:
        - CHOWN
  volumeMounts:
    {{- if has .Values.storage.pages.mountPath $dirs }}
    - name: doracache-pages
      mountPath: {{ .Values.storage.pages.mountPath }}
    {{- end }}
    {{- if has .Values.storage.metastore.mountPath $dirs }}
    - name: doracache-metastore
      mountPath: {{ .Values.storage.metastore.mountPath }}
    {{- end }}
{{- end }}
{{- end }}

{{/* The worker container. In sidecar mode it is a native sidecar: an init container with
restartPolicy Always, started before the executor and stopped after it. */}}
{{- define "doracache.workerContainer" -}}
{{- $sidecar := eq (include "doracache.isSidecar" .) "true" }}
{{- $confDir := include "doracache.confDir" . }}
- name: doracache-worker
  image: {{ include "doracache.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  {{- if $sidecar }}
  restartPolicy: Always
  {{- end }}
  command:
    - dora
    - worker
    - start
    - --conf
    - {{ $confDir }}/dora-site.properties
  {{- with .Values.worker.extraArgs }}
  args:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  env:
    # The same file, for `dora` commands run by hand in the container (kubectl exec).
    - name: DORA_CONF_DIR
      value: {{ $confDir }}
    {{- if .Values.cluster.etcd.endpoints }}
    # What other pods reach this worker at, in its etcd membership entry.
    - name: DORA_CLUSTER_ADVERTISE_HOST
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    {{- end }}
    {{- with include "doracache.secretEnv" . | trim }}
    {{- . | nindent 4 }}
    {{- end }}
    {{- with .Values.worker.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    - name: dora-http
      containerPort: {{ .Values.worker.port }}
      protocol: TCP
      {{- if and (not $sidecar) .Values.daemonset.hostPort (not .Values.daemonset.hostNetwork) }}
      hostPort: {{ .Values.worker.port }}
      {{- end }}
  startupProbe:
    {{- include "doracache.probeHandler" (dict "ctx" . "path" "/healthz") | trim | nindent 4 }}
    {{- toYaml .Values.worker.probes.startup | nindent 4 }}
  livenessProbe:
    {{- include "doracache.probeHandler" (dict "ctx" . "path" "/healthz") | trim | nindent 4 }}
    {{- toYaml .Values.worker.probes.liveness | nindent 4 }}
  readinessProbe:
    {{- include "doracache.probeHandler" (dict "ctx" . "path" "/readyz") | trim | nindent 4 }}
    {{- toYaml .Values.worker.probes.readiness | nindent 4 }}
  {{- if and (not $sidecar) .Values.daemonset.preStopSleepSeconds }}
  # Keep serving while the Service and the monitors drop this pod; SIGTERM comes after.
  lifecycle:
    preStop:
      exec:
        command:
          - sleep
          - {{ include "doracache.propertyValue" .Values.daemonset.preStopSleepSeconds | quote }}
  {{- end }}
  resources:
    {{- toYaml .Values.worker.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.worker.securityContext | nindent 4 }}
  volumeMounts:
    - name: doracache-config
      mountPath: {{ $confDir }}
      readOnly: true
    - name: doracache-pages
      mountPath: {{ .Values.storage.pages.mountPath }}
    - name: doracache-metastore
      mountPath: {{ .Values.storage.metastore.mountPath }}
    - name: doracache-work
      mountPath: {{ .Values.storage.workDir }}
    - name: doracache-tmp
      mountPath: /tmp
    {{- include "doracache.tlsVolumeMount" . | nindent 4 }}
    {{- with .Values.worker.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

{{/*
Metrics.
*/}}

{{/* prometheus.io annotations of the pods running a worker others can reach (metrics.podAnnotations). */}}
{{- define "doracache.scrapeAnnotations" -}}
{{- if and .Values.metrics.podAnnotations (ne (include "doracache.loopbackOnly" .) "true") }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ include "doracache.propertyValue" .Values.worker.port | quote }}
prometheus.io/path: /metrics
{{- if .Values.tls.enabled }}
prometheus.io/scheme: https
{{- end }}
{{- end }}
{{- end }}

{{/* One scrape endpoint of a ServiceMonitor or PodMonitor; call with (dict "ctx" $ "monitor" .Values.metrics.podMonitor). */}}
{{- define "doracache.scrapeEndpoint" -}}
- port: dora-http
  path: /metrics
  scheme: {{ include "doracache.scheme" .ctx }}
  {{- with include "doracache.scrapeTlsConfig" .ctx | trim }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with .monitor.interval }}
  interval: {{ . }}
  {{- end }}
  {{- with .monitor.scrapeTimeout }}
  scrapeTimeout: {{ . }}
  {{- end }}
  {{- with include "doracache.tokenRef" .ctx | fromYaml }}
  authorization:
    type: Bearer
    credentials:
      name: {{ .name }}
      key: {{ .key }}
  {{- end }}
  {{- with .monitor.relabelings }}
  relabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .monitor.metricRelabelings }}
  metricRelabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* Stops the render when a monitor is asked for a worker it cannot reach; call with
(dict "ctx" $ "name" "podMonitor"). */}}
{{- define "doracache.checkMonitor" -}}
{{- if eq (include "doracache.loopbackOnly" .ctx) "true" }}
{{- fail (printf "metrics.%s.enabled needs a worker other pods can reach, but it listens on loopback (sidecar mode): bind it elsewhere with properties.dora.worker.http.bind.host, or turn the monitor off" .name) }}
{{- end }}
{{- end }}

{{/*
The executor pod template.
*/}}

{{- define "doracache.executorTemplateName" -}}
{{- printf "%s-executor-pod-template" (include "doracache.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The variable that tells the executor's client where the page files are mounted. Not DORA_:
the configuration loader takes every DORA_ variable for a property key and refuses others. */}}
{{- define "doracache.shortCircuitEnv" -}}DORACACHE_SHORT_CIRCUIT_ROOT{{- end }}

{{/* "true" when the executor container gets the page store: executor.shortCircuit, and a volume
it can share (in daemonset mode only the node's hostPath). */}}
{{- define "doracache.shortCircuit" -}}
{{- if .Values.executor.shortCircuit }}
{{- if or (eq (include "doracache.isSidecar" .) "true") (eq (include "doracache.storageType" (dict "ctx" . "volume" .Values.storage.pages)) "hostPath") }}true{{ end }}
{{- end }}
{{- end }}

{{/* DORA_USER_WORKERS of the executor container: its sidecar on loopback; in daemonset mode its
node's worker, on the node's IP when the worker is published there, else through the node-local
Service. */}}
{{- define "doracache.executorWorkersEnv" -}}
{{- $port := include "doracache.propertyValue" .Values.worker.port }}
{{- $scheme := ternary "https://" "" .Values.tls.enabled }}
{{- if eq (include "doracache.isSidecar" .) "true" }}
- name: DORA_USER_WORKERS
  value: {{ printf "%s127.0.0.1:%s" $scheme $port | quote }}
{{- else if or .Values.daemonset.hostNetwork .Values.daemonset.hostPort }}
- name: HOST_IP
  valueFrom:
    fieldRef:
      fieldPath: status.hostIP
- name: DORA_USER_WORKERS
  value: {{ printf "%s$(HOST_IP):%s" $scheme $port | quote }}
{{- else if .Values.service.enabled }}
- name: DORA_USER_WORKERS
  value: {{ printf "%s%s.%s.svc:%s" $scheme (include "doracache.fullname" .) .Release.Namespace (include "doracache.propertyValue" .Values.service.port) | quote }}
{{- else }}
{{- fail "executor.podTemplate in daemonset mode needs a way to the node's worker: service.enabled, daemonset.hostPort or daemonset.hostNetwork (or set executor.podTemplate: false)" }}
{{- end }}
{{- end }}
