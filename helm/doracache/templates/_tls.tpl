{{/*
TLS on the worker's port (values tls.*).
*/}}

{{/* "https" when the worker serves TLS, else "http". */}}
{{- define "doracache.scheme" -}}
{{- if .Values.tls.enabled }}https{{ else }}http{{ end }}
{{- end }}

{{/* The Secret with the worker's tls.crt, tls.key and CA. */}}
{{- define "doracache.tlsSecretName" -}}
{{- if .Values.tls.secretName }}
{{- .Values.tls.secretName }}
{{- else if .Values.tls.certManager.enabled }}
{{- printf "%s-tls" (include "doracache.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- fail "tls.enabled needs tls.secretName (a Secret with tls.crt and tls.key) or tls.certManager.enabled" }}
{{- end }}
{{- end }}

{{/* The Secret with the executors' client certificate (mutual TLS). */}}
{{- define "doracache.tlsClientSecretName" -}}
{{- if .Values.tls.clientSecretName }}
{{- .Values.tls.clientSecretName }}
{{- else if .Values.tls.certManager.enabled }}
{{- printf "%s-client-tls" (include "doracache.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- fail "tls.clientAuth needs tls.clientSecretName (a Secret with the executors' tls.crt and tls.key) or tls.certManager.enabled" }}
{{- end }}
{{- end }}

{{/* "true" when the worker requires client certificates; stops the render on settings that
cannot work together. */}}
{{- define "doracache.mutualTls" -}}
{{- if .Values.tls.clientAuth }}
{{- if not .Values.tls.enabled }}
{{- fail "tls.clientAuth needs tls.enabled" }}
{{- end }}
{{- if not .Values.tls.caKey }}
{{- fail "tls.clientAuth needs tls.caKey: the CA that client certificates must be signed by" }}
{{- end }}
{{- true }}
{{- end }}
{{- end }}

{{/* The worker's TLS properties as YAML, derived into the site file (see doracache.properties). */}}
{{- define "doracache.tlsProperties" -}}
{{- if .Values.tls.enabled }}
dora.worker.tls.cert.file: {{ printf "%s/tls.crt" .Values.tls.mountPath }}
dora.worker.tls.key.file: {{ printf "%s/tls.key" .Values.tls.mountPath }}
{{- if include "doracache.mutualTls" . }}
dora.worker.tls.client.ca.file: {{ printf "%s/%s" .Values.tls.mountPath .Values.tls.caKey }}
{{- end }}
{{- end }}
{{- end }}

{{/* The names the worker's certificate must carry: what clients connect to first (the
Service's name in DORA_USER_WORKERS in daemonset mode, loopback in sidecar mode), then
tls.certManager's extra names. YAML with dnsNames and ipAddresses. */}}
{{- define "doracache.tlsNames" -}}
{{- $fullname := include "doracache.fullname" . }}
{{- $dns := list "localhost" }}
{{- $ips := list "127.0.0.1" }}
{{- if ne (include "doracache.isSidecar" .) "true" }}
{{- $service := printf "%s.%s" $fullname .Release.Namespace }}
{{- $dns = list (printf "%s.svc" $service) $fullname $service (printf "%s.svc.cluster.local" $service) }}
{{- $ips = list }}
{{- end }}
dnsNames:
  {{- toYaml (concat $dns .Values.tls.certManager.dnsNames) | nindent 2 }}
{{- with concat $ips .Values.tls.certManager.ipAddresses }}
ipAddresses:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The host name clients and scrapers check the worker's certificate against. */}}
{{- define "doracache.tlsServerName" -}}
{{- first (get (include "doracache.tlsNames" . | fromYaml) "dnsNames") }}
{{- end }}

{{/* The volume with the worker's pair, in the worker container. */}}
{{- define "doracache.tlsVolume" -}}
{{- if .Values.tls.enabled }}
- name: doracache-tls
  secret:
    secretName: {{ include "doracache.tlsSecretName" . }}
{{- end }}
{{- end }}

{{- define "doracache.tlsVolumeMount" -}}
{{- if .Values.tls.enabled }}
- name: doracache-tls
  mountPath: {{ .Values.tls.mountPath }}
  readOnly: true
{{- end }}
{{- end }}

{{/* The executor's volumes: the CA alone (never the worker's private key) and, for mutual TLS,
the client pair. */}}
{{- define "doracache.executorTlsVolumes" -}}
{{- if and .Values.tls.enabled .Values.tls.caKey }}
- name: doracache-tls-ca
  secret:
    secretName: {{ include "doracache.tlsSecretName" . }}
    items:
      - key: {{ .Values.tls.caKey }}
        path: {{ .Values.tls.caKey }}
{{- end }}
{{- if include "doracache.mutualTls" . }}
- name: doracache-client-tls
  secret:
    secretName: {{ include "doracache.tlsClientSecretName" . }}
{{- end }}
{{- end }}

{{- define "doracache.executorTlsVolumeMounts" -}}
{{- if and .Values.tls.enabled .Values.tls.caKey }}
- name: doracache-tls-ca
  mountPath: {{ .Values.tls.mountPath }}
  readOnly: true
{{- end }}
{{- if include "doracache.mutualTls" . }}
- name: doracache-client-tls
  mountPath: {{ .Values.tls.clientMountPath }}
  readOnly: true
{{- end }}
{{- end }}

{{/* The client keys of the executor container: the CA it verifies the worker with and, for
mutual TLS, the certificate it presents (DORA_ + key upper-cased, dots to underscores). */}}
{{- define "doracache.executorTlsEnv" -}}
{{- if and .Values.tls.enabled .Values.tls.caKey }}
- name: DORA_USER_TLS_CA_FILE
  value: {{ printf "%s/%s" .Values.tls.mountPath .Values.tls.caKey | quote }}
{{- end }}
{{- if include "doracache.mutualTls" . }}
- name: DORA_USER_TLS_CERT_FILE
  value: {{ printf "%s/tls.crt" .Values.tls.clientMountPath | quote }}
- name: DORA_USER_TLS_KEY_FILE
  value: {{ printf "%s/tls.key" .Values.tls.clientMountPath | quote }}
{{- end }}
{{- end }}

{{/* tlsConfig of a scrape endpoint (ServiceMonitor, PodMonitor): the CA and server name the
worker's certificate is checked with, and the client pair for mutual TLS. */}}
{{- define "doracache.scrapeTlsConfig" -}}
{{- if .Values.tls.enabled }}
tlsConfig:
  serverName: {{ include "doracache.tlsServerName" . }}
  {{- if .Values.tls.caKey }}
  ca:
    secret:
      name: {{ include "doracache.tlsSecretName" . }}
      key: {{ .Values.tls.caKey }}
  {{- end }}
  {{- if include "doracache.mutualTls" . }}
  cert:
    secret:
      name: {{ include "doracache.tlsClientSecretName" . }}
      key: tls.crt
  keySecret:
    name: {{ include "doracache.tlsClientSecretName" . }}
    key: tls.key
  {{- end }}
{{- end }}
{{- end }}
