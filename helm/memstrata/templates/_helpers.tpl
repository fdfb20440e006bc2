{{/* Names ---------------------------------------------------------------- */}}
{{- define "memstrata.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "memstrata.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "memstrata.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "memstrata.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Labels --------------------------------------------------------------- */}}
{{- define "memstrata.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "memstrata.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: pass (dict "ctx" $ "component" "query") */}}
{{- define "memstrata.selectorLabels" -}}
app.kubernetes.io/name: {{ include "memstrata.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "memstrata.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* The ConfigMap's data: chart-computed settings, then the user's `config`. */}}
{{- define "memstrata.configData" -}}
{{- $c := dict
  "MEMSTRATA_DATA_DIR" "/data"
  "MEMSTRATA_SERVICE_HOST" "0.0.0.0"
  "MEMSTRATA_SERVICE_PORT" (toString .Values.service.grpcPort)
  "MEMSTRATA_SERVICE_METRICS_PORT" (toString .Values.service.metricsPort)
  "MEMSTRATA_STREAM_METRICS_PORT" (toString .Values.service.streamMetricsPort)
  "MEMSTRATA_STREAM_METRICS_ADDR" "0.0.0.0" -}}
{{- if .Values.keysSecret -}}
{{- $_ := set $c "MEMSTRATA_SERVICE_KEYS_FILE" "/etc/memstrata/keys/service-keys.json" -}}
{{- end -}}
{{- if eq .Values.mode "distributed" -}}
{{- $d := .Values.distributed -}}
{{- $_ := set $c "MEMSTRATA_KAFKA_BROKERS" (required "distributed.kafkaBrokers is required when mode=distributed" $d.kafkaBrokers) -}}
{{- $_ := set $c "MEMSTRATA_VECTOR_BACKEND" "qdrant" -}}
{{- $_ := set $c "MEMSTRATA_QDRANT_URL" (required "distributed.qdrantUrl is required when mode=distributed" $d.qdrantUrl) -}}
{{- $_ := set $c "MEMSTRATA_LEXICAL_BACKEND" "opensearch" -}}
{{- $_ := set $c "MEMSTRATA_DOC_BACKEND" "opensearch" -}}
{{- $_ := set $c "MEMSTRATA_OPENSEARCH_URL" (required "distributed.opensearchUrl is required when mode=distributed" $d.opensearchUrl) -}}
{{- end -}}
{{- with .Values.grpcTls.secret -}}
{{- $_ := set $c "MEMSTRATA_SERVICE_TLS_CERT" "/etc/memstrata/grpc-tls/tls.crt" -}}
{{- $_ := set $c "MEMSTRATA_SERVICE_TLS_KEY" "/etc/memstrata/grpc-tls/tls.key" -}}
{{- with $.Values.grpcTls.clientCaKey -}}
{{- $_ := set $c "MEMSTRATA_SERVICE_TLS_CLIENT_CA" (printf "/etc/memstrata/grpc-tls/%s" .) -}}
{{- end -}}
{{- end -}}
{{- range $k, $v := .Values.config -}}
{{- $_ := set $c $k (toString $v) -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}

{{/* terminationGracePeriodSeconds: above the service's grace and the worker's drain. */}}
{{- define "memstrata.gracePeriod" -}}
{{- $grace := float64 (default "10" (index .Values.config "MEMSTRATA_SERVICE_GRACE_S")) -}}
{{- $drain := float64 (default "60" (index .Values.config "MEMSTRATA_STREAM_DRAIN_TIMEOUT_S")) -}}
{{- $need := max (ceil $grace) (ceil $drain) | int -}}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds -}}
{{- add $need 15 -}}
{{- else -}}
{{- $given := int .Values.terminationGracePeriodSeconds -}}
{{- if le $given $need -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed MEMSTRATA_SERVICE_GRACE_S and MEMSTRATA_STREAM_DRAIN_TIMEOUT_S (%d)" $given $need) -}}
{{- end -}}
{{- $given -}}
{{- end -}}
{{- end -}}

{{/* Pod-level settings shared by every memstrata pod: pass (dict "ctx" $ "component" "query") */}}
{{- define "memstrata.podCommon" -}}
{{- $ := .ctx -}}
{{- $component := .component -}}
serviceAccountName: {{ include "memstrata.serviceAccountName" $ }}
automountServiceAccountToken: {{ $.Values.serviceAccount.automountToken }}
terminationGracePeriodSeconds: {{ include "memstrata.gracePeriod" $ }}
securityContext:
  {{- toYaml $.Values.podSecurityContext | nindent 2 }}
{{- with $.Values.imagePullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- with $.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $.Values.topologySpread }}
topologySpreadConstraints:
  {{- range $.Values.topologySpread }}
  - maxSkew: {{ .maxSkew }}
    topologyKey: {{ .topologyKey }}
    whenUnsatisfiable: {{ .whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- include "memstrata.selectorLabels" (dict "ctx" $ "component" $component) | nindent 8 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* Pod metadata: labels, checksums. */}}
{{- define "memstrata.podMetadata" -}}
{{- $ := .ctx -}}
labels:
  {{- include "memstrata.labels" $ | nindent 2 }}
  app.kubernetes.io/component: {{ .component }}
  {{- with $.Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
annotations:
  # 32 hex digits: podman kube play refuses annotation values over 63 characters.
  checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") $ | sha256sum | trunc 32 }}
  {{- with $.Values.podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/* Environment of memstrata containers. */}}
{{- define "memstrata.envFrom" -}}
envFrom:
  - configMapRef:
      name: {{ include "memstrata.fullname" . }}
  {{- if .Values.existingSecret }}
  - secretRef:
      name: {{ .Values.existingSecret }}
  {{- end }}
{{- end -}}

{{/* Volume mounts of memstrata containers (the data volume is named "data"). */}}
{{- define "memstrata.volumeMounts" -}}
volumeMounts:
  - name: data
    mountPath: /data
  - name: tmp
    mountPath: /tmp
  {{- if .Values.keysSecret }}
  - name: keys
    mountPath: /etc/memstrata/keys
    readOnly: true
  {{- end }}
  {{- if .Values.tlsSecret }}
  - name: tls
    mountPath: /etc/memstrata/tls
    readOnly: true
  {{- end }}
  {{- if .Values.grpcTls.secret }}
  - name: grpc-tls
    mountPath: /etc/memstrata/grpc-tls
    readOnly: true
  {{- end }}
{{- end -}}

{{/* Volumes other than "data". */}}
{{- define "memstrata.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 1Gi
{{- if .Values.keysSecret }}
- name: keys
  secret:
    secretName: {{ .Values.keysSecret }}
    defaultMode: 0440
{{- end }}
{{- if .Values.tlsSecret }}
- name: tls
  secret:
    secretName: {{ .Values.tlsSecret }}
    defaultMode: 0440
{{- end }}
{{- if .Values.grpcTls.secret }}
- name: grpc-tls
  secret:
    secretName: {{ .Values.grpcTls.secret }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{/* gRPC health probes of the query service. The kubelet's gRPC probes speak
plaintext only: with grpcTls.secret they become exec probes running the image's own
TLS health check (memstrata.client.health_probe) against the local port. */}}
{{- define "memstrata.probeAction" -}}
{{- $ := .ctx -}}
{{- if $.Values.grpcTls.secret -}}
{{- $dir := "/etc/memstrata/grpc-tls" -}}
{{- $name := $.Values.grpcTls.serverName | default (printf "%s.%s.svc" (include "memstrata.fullname" $) $.Release.Namespace) -}}
exec:
  command:
    - /opt/memstrata/bin/python
    - -m
    - memstrata.client.health_probe
    - --address
    - 127.0.0.1:{{ $.Values.service.grpcPort }}
    - --ca
    - {{ $dir }}/{{ $.Values.grpcTls.caKey }}
    - --server-name
    - {{ $name }}
    {{- if $.Values.grpcTls.clientCaKey }}
    - --cert
    - {{ $dir }}/tls.crt
    - --key
    - {{ $dir }}/tls.key
    {{- end }}
    {{- with .service }}
    - --service
    - {{ . }}
    {{- end }}
    - --timeout
    - {{ .timeout | quote }}
{{- else -}}
grpc:
  port: {{ $.Values.service.grpcPort }}
  {{- with .service }}
  service: {{ . }}
  {{- end }}
{{- end -}}
{{- end -}}

{{- define "memstrata.grpcProbes" -}}
{{- $p := .Values.probes -}}
startupProbe:
  {{- include "memstrata.probeAction" (dict "ctx" . "service" "" "timeout" $p.startup.timeoutSeconds) | nindent 2 }}
  periodSeconds: {{ $p.startup.periodSeconds }}
  failureThreshold: {{ $p.startup.failureThreshold }}
  timeoutSeconds: {{ $p.startup.timeoutSeconds }}
livenessProbe:
  {{- include "memstrata.probeAction" (dict "ctx" . "service" "" "timeout" $p.liveness.timeoutSeconds) | nindent 2 }}
  periodSeconds: {{ $p.liveness.periodSeconds }}
  failureThreshold: {{ $p.liveness.failureThreshold }}
  timeoutSeconds: {{ $p.liveness.timeoutSeconds }}
readinessProbe:
  {{- include "memstrata.probeAction" (dict "ctx" . "service" "memstrata.v1.MemoryService" "timeout" $p.readiness.timeoutSeconds) | nindent 2 }}
  periodSeconds: {{ $p.readiness.periodSeconds }}
  failureThreshold: {{ $p.readiness.failureThreshold }}
  timeoutSeconds: {{ $p.readiness.timeoutSeconds }}
{{- end -}}

{{- define "memstrata.containerSecurity" -}}
securityContext:
  {{- toYaml .Values.containerSecurityContext | nindent 2 }}
{{- end -}}
