{{/*
Names and labels.
*/}}
{{- define "eventscript.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name (truncated to 63 characters, the DNS label limit).
*/}}
{{- define "eventscript.fullname" -}}
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

{{- define "eventscript.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "eventscript.selectorLabels" -}}
app.kubernetes.io/name: {{ include "eventscript.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "eventscript.labels" -}}
helm.sh/chart: {{ include "eventscript.chart" . }}
{{ include "eventscript.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: worker
{{- end }}

{{- define "eventscript.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
The topology written to the ConfigMap: values.topology parsed, with the health server made
reachable by the kubelet (host 0.0.0.0 unless the topology names one) on the chart's health port.
*/}}
{{- define "eventscript.topology" -}}
{{- $topology := fromYaml (required "topology (the topology YAML text) is required" .Values.topology) }}
{{- if hasKey $topology "Error" }}
{{- fail (printf "topology is not valid YAML: %s" (get $topology "Error")) }}
{{- end }}
{{- if not (get $topology "programs") }}
{{- fail "topology: give at least one program under 'programs'" }}
{{- end }}
{{- if get $topology "instance_id" }}
{{- fail "topology: remove 'instance_id': each replica's instance id is its pod name (EVENTSCRIPT_INSTANCE_ID)" }}
{{- end }}
{{- $health := get $topology "health" | default dict }}
{{- $_ := set $health "port" (int .Values.health.port) }}
{{- if not (get $health "host") }}
{{- $_ := set $health "host" "0.0.0.0" }}
{{- end }}
{{- $_ := set $topology "health" $health }}
{{- toYaml $topology }}
{{- end }}
