{{/*
Names, labels and the wiring the templates share.
*/}}

{{- define "arena.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-<chart>, or just <release> when it already contains the chart name. */}}
{{- define "arena.fullname" -}}
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

{{- define "arena.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The arena's components: values key -> component name, port, and whether it loads the Secret
(provider keys, target tokens, a Redis URL with a password) and is an A2A agent (it gets
ARENA_PUBLIC_URL).
*/}}
{{- define "arena.components" -}}
orchestrator: {name: orchestrator, port: 8080, secrets: true, a2a: false}
attacker: {name: attacker, port: 8082, secrets: true, a2a: true}
defender: {name: defender, port: 8081, secrets: true, a2a: true}
defenderNaive: {name: defender-naive, port: 8081, secrets: true, a2a: true}
model: {name: model, port: 8090, secrets: false, a2a: false}
redis: {name: redis, port: 6379, secrets: false, a2a: false}
jaeger: {name: jaeger, port: 16686, secrets: false, a2a: false}
{{- end -}}

{{/* The arena Deployments, in a fixed order. */}}
{{- define "arena.arenaKeys" -}}
{{- list "orchestrator" "attacker" "defender" "defenderNaive" "model" | toJson -}}
{{- end -}}

{{/* <fullname>-<component>: (dict "root" $ "name" "defender-naive") */}}
{{- define "arena.componentFullname" -}}
{{- printf "%s-%s" (include "arena.fullname" .root) .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels: (dict "root" $ "name" <component name>) */}}
{{- define "arena.selectorLabels" -}}
app.kubernetes.io/name: {{ include "arena.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{/* Standard labels: (dict "root" $ "name" <component name>); name may be empty. */}}
{{- define "arena.labels" -}}
helm.sh/chart: {{ include "arena.chart" .root }}
app.kubernetes.io/name: {{ include "arena.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- with .name }}
app.kubernetes.io/component: {{ . }}
{{- end }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: a2a-arena
{{- end -}}

{{/* An image reference: (dict "root" $ "image" <values.image> "arena" <bool>) */}}
{{- define "arena.image" -}}
{{- $repo := .image.repository -}}
{{- if and .arena .root.Values.imageRegistry -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" .root.Values.imageRegistry) $repo -}}
{{- end -}}
{{- printf "%s:%s" $repo (toString (default .root.Chart.AppVersion .image.tag)) -}}
{{- end -}}

{{/*
A value as an environment string. Numbers from values files arrive as float64, which
toString would print as 2.592e+06; integral ones are printed as integers.
*/}}
{{- define "arena.envString" -}}
{{- if kindIs "float64" . -}}
{{- if eq (float64 (int64 .)) . -}}{{ int64 . }}{{- else -}}{{ . }}{{- end -}}
{{- else if kindIs "invalid" . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{- define "arena.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "arena.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret the arena services load, or nothing. */}}
{{- define "arena.secretName" -}}
{{- if .Values.existingSecret -}}
{{- .Values.existingSecret -}}
{{- else if include "arena.secretData" . -}}
{{- printf "%s-secrets" (include "arena.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The chart's own Secret data (non-empty `secrets` values), as YAML; empty when none. */}}
{{- define "arena.secretData" -}}
{{- range $key, $value := .Values.secrets }}
{{- $text := include "arena.envString" $value }}
{{- if ne $text "" }}
{{ $key }}: {{ $text | b64enc | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
The ConfigMap's data, as YAML: non-empty `config` values, the wiring computed from the
topology where the matching value is empty, and the OpenTelemetry export. Keys present
in `secrets` are left out (the Secret is loaded after the ConfigMap and wins anyway).
*/}}
{{- define "arena.configData" -}}
{{- $root := . -}}
{{- $data := dict -}}
{{- range $key, $value := .Values.config -}}
{{- $text := include "arena.envString" $value -}}
{{- if ne $text "" -}}{{- $_ := set $data $key $text -}}{{- end -}}
{{- end -}}
{{- if and .Values.redis.enabled (not (hasKey $data "ARENA_REDIS_URL")) -}}
{{- $_ := set $data "ARENA_REDIS_URL" (printf "redis://%s:6379/0" (include "arena.componentFullname" (dict "root" $root "name" "redis"))) -}}
{{- end -}}
{{- if and .Values.model.enabled (not (hasKey $data "ARENA_EMBEDDED_MODEL_URL")) -}}
{{- $_ := set $data "ARENA_EMBEDDED_MODEL_URL" (printf "http://%s:8090/v1" (include "arena.componentFullname" (dict "root" $root "name" "model"))) -}}
{{- end -}}
{{- if and .Values.defender.enabled (not (hasKey $data "ARENA_DEFENDER_URL")) -}}
{{- $_ := set $data "ARENA_DEFENDER_URL" (printf "http://%s:8081" (include "arena.componentFullname" (dict "root" $root "name" "defender"))) -}}
{{- end -}}
{{- if and .Values.attacker.enabled (not (hasKey $data "ARENA_ATTACKER_URL")) -}}
{{- $_ := set $data "ARENA_ATTACKER_URL" (printf "http://%s:8082" (include "arena.componentFullname" (dict "root" $root "name" "attacker"))) -}}
{{- end -}}
{{- if .Values.jaeger.enabled -}}
{{- $_ := set $data "OTEL_EXPORTER_OTLP_ENDPOINT" (printf "http://%s:4318" (include "arena.componentFullname" (dict "root" $root "name" "jaeger"))) -}}
{{- $_ := set $data "OTEL_EXPORTER_OTLP_PROTOCOL" "http/protobuf" -}}
{{- $_ := set $data "OTEL_METRICS_EXPORTER" "none" -}}
{{- else if .Values.otel.endpoint -}}
{{- $_ := set $data "OTEL_EXPORTER_OTLP_ENDPOINT" .Values.otel.endpoint -}}
{{- $_ := set $data "OTEL_EXPORTER_OTLP_PROTOCOL" (default "http/protobuf" .Values.otel.protocol) -}}
{{- end -}}
{{- range $key, $value := .Values.otel.env -}}
{{- $text := include "arena.envString" $value -}}
{{- if ne $text "" -}}{{- $_ := set $data $key $text -}}{{- end -}}
{{- end -}}
{{- range $key, $_ := .Values.secrets -}}
{{- $_ := unset $data $key -}}
{{- end -}}
{{- range $key := keys $data | sortAlpha }}
{{ $key }}: {{ get $data $key | quote }}
{{- end }}
{{- end -}}

{{/* Whether the arena services have a Redis URL from somewhere ("true" or empty). */}}
{{- define "arena.hasRedis" -}}
{{- if or .Values.redis.enabled .Values.config.ARENA_REDIS_URL .Values.existingSecret (get .Values.secrets "ARENA_REDIS_URL") -}}true{{- end -}}
{{- end -}}

{{/* Whether a component's Deployment is autoscaled ("true" or empty): (dict "values" <component values>) */}}
{{- define "arena.autoscaled" -}}
{{- $v := .values -}}
{{- if and (hasKey $v "autoscaling") $v.autoscaling.enabled -}}true{{- end -}}
{{- end -}}

{{/* Fewest replicas a component runs (HPA minimum, or replicas): (dict "values" <component values>) */}}
{{- define "arena.minReplicas" -}}
{{- if include "arena.autoscaled" . -}}
{{- int64 .values.autoscaling.minReplicas -}}
{{- else -}}
{{- int64 .values.replicas -}}
{{- end -}}
{{- end -}}

{{/* Most replicas a component may run (HPA maximum, or replicas): (dict "values" <component values>) */}}
{{- define "arena.maxReplicas" -}}
{{- if include "arena.autoscaled" . -}}
{{- int64 .values.autoscaling.maxReplicas -}}
{{- else -}}
{{- int64 .values.replicas -}}
{{- end -}}
{{- end -}}

{{/* Container env (sorted, names unique): (dict "env" <map>) */}}
{{- define "arena.env" -}}
{{- $env := .env -}}
{{- range $name := keys $env | sortAlpha }}
{{- $value := get $env $name }}
- name: {{ $name }}
{{- if kindIs "map" $value }}
  valueFrom:
    {{- toYaml $value | nindent 4 }}
{{- else }}
  value: {{ include "arena.envString" $value | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Checks that stop a broken configuration before it reaches the cluster. */}}
{{- define "arena.validate" -}}
{{- if and .Values.existingSecret (include "arena.secretData" .) -}}
{{- fail "set either `secrets` or `existingSecret`, not both (put every secret variable in the existing Secret)" -}}
{{- end -}}
{{- if ne (int64 .Values.redis.replicas) 1 -}}
{{- fail "redis.replicas must be 1: the in-chart Redis is a single instance; for more, use an external Redis (redis.enabled=false, config.ARENA_REDIS_URL)" -}}
{{- end -}}
{{- if ne (int64 .Values.jaeger.replicas) 1 -}}
{{- fail "jaeger.replicas must be 1: the in-chart Jaeger keeps traces in memory" -}}
{{- end -}}
{{- if not (include "arena.hasRedis" .) -}}
{{- range $key := list "orchestrator" "attacker" "defender" "defenderNaive" -}}
{{- $v := index $.Values $key -}}
{{- if and $v.enabled (gt (int64 (include "arena.maxReplicas" (dict "values" $v))) 1) -}}
{{- fail (printf "%s may run more than one replica but there is no Redis, so replicas would not share tasks: enable redis, set config.ARENA_REDIS_URL (secrets.ARENA_REDIS_URL with a password), or run one replica (%s.replicas=1, %s.autoscaling.enabled=false)" $key $key $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
