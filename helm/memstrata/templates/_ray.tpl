{{/* Ray's token, from the Secret ray.auth.existingSecret (required with ray.auth.enabled). */}}
{{- define "memstrata.rayTokenRef" -}}
valueFrom:
  secretKeyRef:
    name: {{ required "ray.auth.existingSecret is required when ray.enabled and ray.auth.enabled (a Secret holding the Ray token)" .Values.ray.auth.existingSecret }}
    key: {{ .Values.ray.auth.secretKey }}
{{- end -}}

{{/* Environment of the Ray head and worker containers: token mode and the token. */}}
{{- define "memstrata.rayNodeEnv" -}}
{{- if .Values.ray.auth.enabled }}
env:
  - name: RAY_AUTH_MODE
    value: token
  - name: RAY_AUTH_TOKEN
    {{- include "memstrata.rayTokenRef" . | nindent 4 }}
{{- end }}
{{- end -}}

{{/* Environment of the query service with ray.enabled: the Ray backend, the head's Ray
client address (the KubeRay head Service), and the token. */}}
{{- define "memstrata.rayServiceEnv" -}}
{{- if and (eq .Values.mode "distributed") .Values.ray.enabled }}
env:
  - name: MEMSTRATA_WORKERS_BACKEND
    value: ray
  - name: MEMSTRATA_WORKERS_RAY_ADDRESS
    value: {{ printf "ray://%s-ray-head-svc:%d" (include "memstrata.fullname" .) (int .Values.ray.clientPort) | quote }}
  {{- if .Values.ray.auth.enabled }}
  - name: MEMSTRATA_WORKERS_RAY_AUTH_TOKEN
    {{- include "memstrata.rayTokenRef" . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}
