{{/*
Names and labels.
*/}}
{{- define "eventscript.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name, truncated to 52 characters: a StatefulSet's pods carry the label
controller-revision-hash=<name>-<10-character hash>, which must fit in 63 characters, and the
pod names (<name>-<ordinal>) and PVC names (state-<name>-<ordinal>) stay within the DNS limits.
*/}}
{{- define "eventscript.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "eventscript.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "eventscript.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The PromQL selector of this release's scrape job. The chart's ServiceMonitor leaves the job label
to prometheus-operator's default, the Service's name, so the selector follows nameOverride and
fullnameOverride; prometheusRule.jobSelector replaces it for other scrape set-ups.
*/}}
{{- define "eventscript.jobSelector" -}}
{{- if .Values.prometheusRule.jobSelector }}
{{- .Values.prometheusRule.jobSelector }}
{{- else }}
{{- printf "job=%q, namespace=%q" (include "eventscript.fullname" .) .Release.Namespace }}
{{- end }}
{{- end }}

{{/*
The most partitions of any program's input topics (0 when one of them has a count the chart cannot
know): more replicas than that leave some replicas without a task. A topic listed under the
topology's topics: has its partitions:, or, without them, 1 (the worker makes it so) unless it is
external (made by its producers: any count). A topic not listed is made by whoever writes it.
*/}}
{{- define "eventscript.maxInputPartitions" -}}
{{- $topology := fromYaml .Values.topology }}
{{- $topics := get $topology "topics" | default dict }}
{{- $max := 0 }}
{{- $unknown := false }}
{{- range (get $topology "programs" | default list) }}
{{- range (get . "inputs" | default list) }}
{{- $spec := get $topics (get . "topic" | toString) }}
{{- if and (kindIs "map" $spec) (or (hasKey $spec "partitions") (not (get $spec "external"))) }}
{{- $n := int (get $spec "partitions" | default 1) }}
{{- if gt $n $max }}{{ $max = $n }}{{ end }}
{{- else }}
{{- $unknown = true }}
{{- end }}
{{- end }}
{{- end }}
{{- ternary 0 $max $unknown }}
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
{{- /* A relative source is read from the ConfigMap's folder, which holds only `sources`: without
       this check a pasted topology rendered and its workers crash-looped on a missing file. */}}
{{- range (get $topology "programs") }}
{{- $src := get . "source" | default "" | toString }}
{{- if and $src (not (hasPrefix "/" $src)) (not (hasKey $.Values.sources $src)) }}
{{- fail (printf "topology: program %s has source: %s, read from /etc/eventscript, where only the files under 'sources' are (%s): add it there (sources: {%s: <the program's text>}), or give the absolute path of a file in the image" (toString (get . "name")) $src (keys $.Values.sources | sortAlpha | join ", " | default "none") $src) }}
{{- end }}
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
{{- /* Without kafka.bootstrap_servers the worker would use its default, localhost:9092, and never
       reach the broker that kafka.bootstrapServers (or kafka.existingSecret) names. */}}
{{- $kafka := get $topology "kafka" | default dict }}
{{- if not (get $kafka "bootstrap_servers") }}
{{- $_ := set $kafka "bootstrap_servers" "${KAFKA_BOOTSTRAP_SERVERS}" }}
{{- $_ := set $topology "kafka" $kafka }}
{{- end }}
{{- /* State outside the volume would be lost with the pod (and written to a read-only root): a
       missing or literal state_dir is pointed at the volume; NOTES.txt warns of a literal one only
       (eventscript.strayStateDirs): a missing one is the usual case, nothing to correct. */}}
{{- $volume := printf "${EVENTSCRIPT_STATE_DIR:-%s}" .Values.stateDir }}
{{- if not (include "eventscript.onStateVolume" (list (get $topology "state_dir") .Values.stateDir)) }}
{{- $_ := set $topology "state_dir" $volume }}
{{- end }}
{{- range (get $topology "programs") }}
{{- if and (hasKey . "state_dir") (not (include "eventscript.onStateVolume" (list (get . "state_dir") $.Values.stateDir))) }}
{{- $_ := unset . "state_dir" }}
{{- end }}
{{- end }}
{{- if not (kindIs "invalid" .Values.createTopics) }}
{{- $_ := set $topology "create_topics" .Values.createTopics }}
{{- end }}
{{- toYaml $topology }}
{{- end }}

{{/*
The name of the Job and the CronJob: at most 52 characters, because the CronJob controller appends
an 11-character suffix to name each Job it creates, and Job names become pod labels (63 at most).
*/}}
{{- define "eventscript.backfill.name" -}}
{{- printf "%s-backfill" (include "eventscript.fullname" . | trunc 43 | trimSuffix "-") }}
{{- end }}

{{/*
The program to backfill: backfill.program, which must name a program of the topology; may be left
empty only when the topology has one program.
*/}}
{{- define "eventscript.backfill.program" -}}
{{- $names := list }}
{{- range (get (fromYaml .Values.topology) "programs" | default list) }}
{{- $names = append $names (get . "name" | toString) }}
{{- end }}
{{- $program := .Values.backfill.program }}
{{- if and (not $program) (gt (len $names) 1) }}
{{- fail (printf "backfill.program: name the program to backfill (the topology has %s)" (join ", " $names)) }}
{{- end }}
{{- if and $program (not (has $program $names)) }}
{{- fail (printf "backfill.program: the topology has no program %q (it has %s)" $program (join ", " $names)) }}
{{- end }}
{{- $program }}
{{- end }}

{{/*
"true" when a topology's state_dir is on the state volume: it reads ${EVENTSCRIPT_STATE_DIR} (which
the chart sets to stateDir) or is a path under stateDir; "" otherwise (missing, relative, elsewhere).
Arguments: (list STATE_DIR STATEDIR_VALUE).
*/}}
{{- define "eventscript.onStateVolume" -}}
{{- $dir := index . 0 | default "" | toString }}
{{- $root := index . 1 | trimSuffix "/" }}
{{- if or (contains "${EVENTSCRIPT_STATE_DIR" $dir) (eq $dir $root) (hasPrefix (printf "%s/" $root) $dir) }}true{{ end }}
{{- end }}

{{/*
The topology's literal state_dir values that the chart replaced with the state volume (NOTES.txt
warns about them), joined with ", "; empty when there are none.
*/}}
{{- define "eventscript.strayStateDirs" -}}
{{- $topology := fromYaml .Values.topology }}
{{- $stray := list }}
{{- $top := get $topology "state_dir" }}
{{- if and $top (not (include "eventscript.onStateVolume" (list $top .Values.stateDir))) }}
{{- $stray = append $stray (printf "state_dir: %s" $top) }}
{{- end }}
{{- range (get $topology "programs" | default list) }}
{{- if and (hasKey . "state_dir") (not (include "eventscript.onStateVolume" (list (get . "state_dir") $.Values.stateDir))) }}
{{- $stray = append $stray (printf "programs[%s].state_dir: %s" (get . "name") (get . "state_dir")) }}
{{- end }}
{{- end }}
{{- join ", " $stray }}
{{- end }}

{{/*
Checks across values that the schema cannot express (it sees one value at a time); included by the
StatefulSet so that every install and upgrade runs them.
*/}}
{{- define "eventscript.validate" -}}
{{- if gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas) }}
{{- fail (printf "autoscaling.minReplicas (%d) is above autoscaling.maxReplicas (%d): the autoscaler would never settle; lower minReplicas or raise maxReplicas" (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- end }}
{{- if and .Values.backfill.cronJob.enabled (not .Values.backfill.output) (not .Values.backfill.outputTopics) }}
{{- fail "backfill.cronJob: set backfill.output (a file) or backfill.outputTopics (topics of their own): without them every run writes all the history it reads into the program's live output topics" }}
{{- end }}
{{- if and .Values.backfill.job.enabled (not .Values.backfill.image.tag) }}
{{- fail "backfill.job: set backfill.image.tag: a Job cannot change once created, and without a tag its image follows the chart's appVersion, so the next chart version's upgrade would fail on the Job" }}
{{- end }}
{{- end }}

{{/*
secretMounts as pod volumes and as container volumeMounts (never subPath: a subPath mount is not
updated when its Secret changes). Shared by the workers and the backfill.
*/}}
{{- define "eventscript.secretVolumes" -}}
{{- range $i, $m := .Values.secretMounts }}
- name: {{ printf "secret-%d" $i }}
  secret:
    secretName: {{ $m.secretName }}
    {{- with $m.items }}
    items:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    defaultMode: {{ $m.defaultMode | default 0440 }}
{{- end }}
{{- end }}

{{- define "eventscript.secretVolumeMounts" -}}
{{- range $i, $m := .Values.secretMounts }}
- name: {{ printf "secret-%d" $i }}
  mountPath: {{ $m.mountPath }}
  readOnly: true
{{- end }}
{{- end }}
