{{/*
The backfill Job and CronJob (backfill-job.yaml, backfill-cronjob.yaml): `eventscript backfill` on the
topology of the chart's ConfigMap, in the image built with `docker build --target backfill`.
Their name and program (eventscript.backfill.name, eventscript.backfill.program) are in _helpers.tpl,
beside the other names, because NOTES.txt uses them too.
*/}}

{{/*
Labels of the backfill's Job, CronJob and pods. Deliberately without app.kubernetes.io/name: the
workers' selector (name + instance) picks the Service's endpoints, the PodDisruptionBudget's pods and
the NetworkPolicy's pods, and a backfill pod must be none of them.
*/}}
{{- define "eventscript.backfill.labels" -}}
helm.sh/chart: {{ include "eventscript.chart" . }}
app.kubernetes.io/part-of: {{ include "eventscript.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.backfill.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: backfill
{{- end }}

{{/*
Labels of the backfill's pods: only values that do not change between upgrades (no chart version,
no app version), because a Job's pod template is immutable: a label that followed the chart's
version made every chart upgrade fail on an enabled backfill.job.
*/}}
{{- define "eventscript.backfill.podLabels" -}}
app.kubernetes.io/part-of: {{ include "eventscript.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: backfill
{{- end }}

{{/*
The command line after the image's entrypoint (`eventscript`), one YAML list item per argument.
*/}}
{{- define "eventscript.backfill.args" -}}
{{- $b := .Values.backfill }}
{{- if and $b.output (or $b.outputTopics $b.errorTopic) }}
{{- fail "backfill.output writes a file; backfill.outputTopics and backfill.errorTopic redirect the Kafka sink: set one or the other" }}
{{- end -}}
- backfill
- /etc/eventscript/topology.yaml
{{- with (include "eventscript.backfill.program" .) }}
- --program
- {{ . | quote }}
{{- end }}
{{- range $b.inputs }}
- --input
- {{ . | quote }}
{{- end }}
{{- with $b.output }}
- --output
- {{ . | quote }}
{{- end }}
{{- range $event, $topic := $b.outputTopics }}
- --output-topic
- {{ printf "%s=%s" $event $topic | quote }}
{{- end }}
{{- with $b.errorTopic }}
- --error-topic
- {{ . | quote }}
{{- end }}
{{- range $flag, $value := dict "--from" $b.from "--to" $b.to "--until" $b.until }}
{{- if not (kindIs "invalid" $value) }}{{ if ne (toString $value) "" }}
- {{ $flag }}
- {{ toString $value | quote }}
{{- end }}{{ end }}
{{- end }}
{{- if $b.handover }}
- --handover
{{- end }}
{{- if $b.force }}
- --force
{{- end }}
- --master
- {{ $b.master | quote }}
{{- if not $b.ui }}
- --no-ui
{{- end }}
{{- if $b.verbose }}
- --verbose
{{- end }}
{{- range $b.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
The Kafka address the topology reads as ${KAFKA_BOOTSTRAP_SERVERS}, as the StatefulSet gives it to
the workers: from kafka.existingSecret when set, else kafka.bootstrapServers.
*/}}
{{- define "eventscript.backfill.kafkaEnv" -}}
- name: KAFKA_BOOTSTRAP_SERVERS
  {{- if .Values.kafka.existingSecret }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.kafka.existingSecret }}
      key: {{ .Values.kafka.existingSecretKey }}
  {{- else }}
  value: {{ required "kafka.bootstrapServers (or kafka.existingSecret) is required" .Values.kafka.bootstrapServers | quote }}
  {{- end }}
{{- end }}

{{/*
PYSPARK_SUBMIT_ARGS: backfill.sparkConf as --conf options of the Spark JVM that PySpark launches, so
settings read at start (spark.driver.memory) take effect.
*/}}
{{- define "eventscript.backfill.submitArgs" -}}
{{- $parts := list }}
{{- range $key, $value := .Values.backfill.sparkConf }}
{{- $parts = append $parts (printf "--conf %s=%s" $key (toString $value)) }}
{{- end }}
{{- $parts = append $parts "pyspark-shell" }}
{{- join " " $parts }}
{{- end }}

{{/*
The Job spec, shared by the Job and the CronJob's jobTemplate.
*/}}
{{- define "eventscript.backfill.jobSpec" -}}
{{- $b := .Values.backfill -}}
backoffLimit: {{ $b.backoffLimit }}
{{- if not (kindIs "invalid" $b.activeDeadlineSeconds) }}
activeDeadlineSeconds: {{ $b.activeDeadlineSeconds }}
{{- end }}
{{- if not (kindIs "invalid" $b.ttlSecondsAfterFinished) }}
ttlSecondsAfterFinished: {{ $b.ttlSecondsAfterFinished }}
{{- end }}
template:
  metadata:
    # Nothing here follows the topology, the log settings or the chart's version: the pod reads
    # those at start (ConfigMaps), so changing them never touches the Job's immutable template.
    labels:
      {{- include "eventscript.backfill.podLabels" . | nindent 6 }}
    {{- with $b.podAnnotations }}
    annotations:
      {{- toYaml . | nindent 6 }}
    {{- end }}
  spec:
    # A failed backfill writes no output file (and aborts its Kafka transaction): the Job's
    # backoffLimit decides whether it runs again, never the kubelet in place.
    restartPolicy: Never
    {{- with .Values.imagePullSecrets }}
    imagePullSecrets:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    serviceAccountName: {{ include "eventscript.serviceAccountName" . }}
    automountServiceAccountToken: false
    {{- with .Values.priorityClassName }}
    priorityClassName: {{ . }}
    {{- end }}
    {{- with .Values.podSecurityContext }}
    securityContext:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    containers:
      - name: backfill
        image: {{ printf "%s:%s" $b.image.repository ($b.image.tag | default .Chart.AppVersion) | quote }}
        imagePullPolicy: {{ $b.image.pullPolicy }}
        args:
          {{- include "eventscript.backfill.args" . | nindent 10 }}
        # Spark writes its scratch files, and Java its perf data, under /tmp (an emptyDir: the root
        # filesystem is read-only).
        workingDir: /tmp
        env:
          {{- include "eventscript.backfill.kafkaEnv" . | nindent 10 }}
          - name: EVENTSCRIPT_STATE_DIR
            value: /tmp/eventscript
          - name: EVENTSCRIPT_LOG_FORMAT
            valueFrom:
              configMapKeyRef:
                name: {{ include "eventscript.backfill.name" . }}
                key: log-format
          - name: EVENTSCRIPT_LOG_LEVEL
            valueFrom:
              configMapKeyRef:
                name: {{ include "eventscript.backfill.name" . }}
                key: log-level
          - name: HOME
            value: /tmp
          - name: PYSPARK_SUBMIT_ARGS
            value: {{ include "eventscript.backfill.submitArgs" . | quote }}
          {{- with .Values.env }}
          {{- toYaml . | nindent 10 }}
          {{- end }}
          {{- with $b.env }}
          {{- toYaml . | nindent 10 }}
          {{- end }}
        {{- with .Values.envFrom }}
        envFrom:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        {{- if $b.ui }}
        ports:
          # Spark's web UI: kubectl port-forward pod/<pod> 4040
          - name: spark-ui
            containerPort: 4040
            protocol: TCP
        {{- end }}
        {{- with $b.resources }}
        resources:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        {{- with .Values.securityContext }}
        securityContext:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        volumeMounts:
          - name: topology
            mountPath: /etc/eventscript
            readOnly: true
          - name: tmp
            mountPath: /tmp
          {{- with (include "eventscript.secretVolumeMounts" . | trim) }}{{ . | nindent 10 }}{{ end }}
          {{- with .Values.extraVolumeMounts }}
          {{- toYaml . | nindent 10 }}
          {{- end }}
          {{- with $b.volumeMounts }}
          {{- toYaml . | nindent 10 }}
          {{- end }}
    volumes:
      - name: topology
        configMap:
          name: {{ include "eventscript.fullname" . }}
      - name: tmp
        {{- with $b.tmpSizeLimit }}
        emptyDir:
          sizeLimit: {{ . }}
        {{- else }}
        emptyDir: {}
        {{- end }}
      {{- with (include "eventscript.secretVolumes" . | trim) }}{{ . | nindent 6 }}{{ end }}
      {{- with .Values.extraVolumes }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
      {{- with $b.volumes }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    {{- with $b.nodeSelector }}
    nodeSelector:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $b.affinity }}
    affinity:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $b.tolerations }}
    tolerations:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end }}
