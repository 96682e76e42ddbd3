{{- define "mesh.labels" -}}
app.kubernetes.io/name: mesh
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
