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
The arena's components: values key -> component name, port, which secret variables it
gets, and whether it is an A2A agent (it gets ARENA_PUBLIC_URL). `secrets`: "shared" loads
the shared Secret (`secrets` minus target tokens, or `existingSecret`) with envFrom;
"redisUrl" gets only its ARENA_REDIS_URL key (secretKeyRef); "none" nothing. `targetTokens`:
loads the target-token Secret (ARENA_TARGET_TOKEN_* of `secrets`, or
`existingTargetTokenSecret`) and, with auth on, gets ARENA_TARGET_TOKEN_ARENA; only the
attacker, which sends them to targets. `auth`: checks bearer tokens (ARENA_API_TOKENS and
ARENA_API_READ_TOKENS of the auth Secret, secretKeyRef) when auth is on.
*/}}
{{- define "arena.components" -}}
orchestrator: {name: orchestrator, port: 8080, secrets: redisUrl, targetTokens: false, auth: true, a2a: false}
attacker: {name: attacker, port: 8082, secrets: shared, targetTokens: true, auth: true, a2a: true}
defender: {name: defender, port: 8081, secrets: shared, targetTokens: false, auth: true, a2a: true}
defenderNaive: {name: defender-naive, port: 8081, secrets: shared, targetTokens: false, auth: true, a2a: true}
model: {name: model, port: 8090, secrets: none, targetTokens: false, auth: false, a2a: false}
redis: {name: redis, port: 6379, secrets: none, targetTokens: false, auth: false, a2a: false}
jaeger: {name: jaeger, port: 16686, secrets: none, targetTokens: false, auth: false, a2a: false}
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

{{/* The prefix of the `secrets` keys that go to the attacker only. */}}
{{- define "arena.targetTokenPrefix" -}}ARENA_TARGET_TOKEN_{{- end -}}

{{/*
The shared Secret (model API keys, a Redis URL with a password, ...: every key of `secrets`
but the target tokens), loaded by the attacker and the defenders, its ARENA_REDIS_URL also
by the orchestrator: `existingSecret`, the chart's own, or nothing.
*/}}
{{- define "arena.sharedSecretName" -}}
{{- if .Values.existingSecret -}}
{{- .Values.existingSecret -}}
{{- else if include "arena.sharedSecretData" . -}}
{{- printf "%s-secrets" (include "arena.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The target-token Secret, loaded by the attacker only: `existingTargetTokenSecret`, the chart's own, or nothing. */}}
{{- define "arena.targetTokenSecretName" -}}
{{- if .Values.existingTargetTokenSecret -}}
{{- .Values.existingTargetTokenSecret -}}
{{- else if include "arena.targetTokenSecretData" . -}}
{{- printf "%s-target-tokens" (include "arena.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The chart's shared Secret data (non-empty `secrets` values but target tokens), as YAML; empty when none. */}}
{{- define "arena.sharedSecretData" -}}
{{- $prefix := include "arena.targetTokenPrefix" . -}}
{{- range $key, $value := .Values.secrets }}
{{- $text := include "arena.envString" $value }}
{{- if and (ne $text "") (not (hasPrefix $prefix $key)) }}
{{ $key }}: {{ $text | b64enc | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The chart's target-token Secret data (non-empty ARENA_TARGET_TOKEN_* of `secrets`), as YAML; empty when none. */}}
{{- define "arena.targetTokenSecretData" -}}
{{- $prefix := include "arena.targetTokenPrefix" . -}}
{{- range $key, $value := .Values.secrets }}
{{- $text := include "arena.envString" $value }}
{{- if and (ne $text "") (hasPrefix $prefix $key) }}
{{ $key }}: {{ $text | b64enc | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
Authentication (auth.*). On unless auth.enabled is false, also when an upgrade reuses values
saved before `auth` existed ("true" or empty).
*/}}
{{- define "arena.authEnabled" -}}
{{- $auth := .Values.auth | default dict -}}
{{- if or (not (hasKey $auth "enabled")) $auth.enabled -}}true{{- end -}}
{{- end -}}

{{/* The Secret holding ARENA_API_TOKENS: auth.existingSecret, else <fullname>-auth; empty with auth off. */}}
{{- define "arena.authSecretName" -}}
{{- if include "arena.authEnabled" . -}}
{{- $auth := .Values.auth | default dict -}}
{{- default (printf "%s-auth" (include "arena.fullname" .)) $auth.existingSecret -}}
{{- end -}}
{{- end -}}

{{/* The key of the auth Secret the attacker gets as ARENA_TARGET_TOKEN_ARENA (one token). */}}
{{- define "arena.authTargetTokenKey" -}}
{{- $auth := .Values.auth | default dict -}}
{{- default "ARENA_API_TOKENS" $auth.targetTokenKey -}}
{{- end -}}

{{/*
The chart's own auth Secret data, as YAML; empty with auth off or auth.existingSecret. The token
of that Secret when it is already in the cluster (`lookup`), so it is made once, on install, and
kept across upgrades; else a new random 48-character one. `helm template` and client dry runs
see no cluster: they make a new token every time.
*/}}
{{- define "arena.authSecretData" -}}
{{- $auth := .Values.auth | default dict -}}
{{- if and (include "arena.authEnabled" .) (not $auth.existingSecret) -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "arena.authSecretName" .) | default dict -}}
{{- $token := get ($existing.data | default dict) "ARENA_API_TOKENS" -}}
ARENA_API_TOKENS: {{ default (randAlphaNum 48 | b64enc) $token | quote }}
{{- end -}}
{{- end -}}

{{/*
Container env of a component for authentication, as JSON (empty map with auth off): (dict
"root" $ "component" <arena.components entry>). Every `auth` component gets ARENA_API_TOKENS
(and, from auth.existingSecret, the optional ARENA_API_READ_TOKENS); the attacker also
ARENA_TARGET_TOKEN_ARENA, the token campaigns name for the release's own defenders.
*/}}
{{- define "arena.authEnv" -}}
{{- $root := .root -}}
{{- $c := .component -}}
{{- $name := include "arena.authSecretName" $root -}}
{{- $auth := $root.Values.auth | default dict -}}
{{- $env := dict -}}
{{- if and $name $c.auth -}}
{{- $_ := set $env "ARENA_API_TOKENS" (dict "secretKeyRef" (dict "name" $name "key" "ARENA_API_TOKENS")) -}}
{{- if $auth.existingSecret -}}
{{- $_ := set $env "ARENA_API_READ_TOKENS" (dict "secretKeyRef" (dict "name" $name "key" "ARENA_API_READ_TOKENS" "optional" true)) -}}
{{- if eq $c.name "orchestrator" -}}
{{- /* For an attacker outside the release (config.ARENA_ATTACKER_URL) with tokens of its own. */ -}}
{{- $_ := set $env "ARENA_ATTACKER_TOKEN" (dict "secretKeyRef" (dict "name" $name "key" "ARENA_ATTACKER_TOKEN" "optional" true)) -}}
{{- end -}}
{{- end -}}
{{- /* Only with a defender of the release to send it to (ARENA_TARGET_CREDENTIAL_ORIGINS scopes
it to them): the release's API token must not be a token any campaign can aim elsewhere. */ -}}
{{- if and $c.targetTokens (or $root.Values.defender.enabled $root.Values.defenderNaive.enabled) -}}
{{- $_ := set $env "ARENA_TARGET_TOKEN_ARENA" (dict "secretKeyRef" (dict "name" $name "key" (include "arena.authTargetTokenKey" $root))) -}}
{{- end -}}
{{- end -}}
{{- $env | toJson -}}
{{- end -}}

{{/* The settings that are secrets: never in `config` (the ConfigMap) or `secrets`, only in the auth Secret. */}}
{{- define "arena.authSettings" -}}
{{- list "ARENA_API_TOKENS" "ARENA_API_READ_TOKENS" "ARENA_ATTACKER_TOKEN" "ARENA_ORCHESTRATOR_TOKEN" | toJson -}}
{{- end -}}

{{/* Whether `secrets` has a non-empty ARENA_REDIS_URL ("true" or empty). */}}
{{- define "arena.secretsHaveRedisUrl" -}}
{{- if ne (include "arena.envString" (get (.Values.secrets | default dict) "ARENA_REDIS_URL")) "" -}}true{{- end -}}
{{- end -}}

{{/*
The orchestrator's ARENA_REDIS_URL from the shared Secret, as a valueFrom map (JSON), or
empty: the orchestrator needs no model key, so it gets this one key only. From
`existingSecret` the key is optional (without it the ConfigMap's URL stays).
*/}}
{{- define "arena.redisUrlFromSecret" -}}
{{- if .Values.existingSecret -}}
{{- dict "secretKeyRef" (dict "name" .Values.existingSecret "key" "ARENA_REDIS_URL" "optional" true) | toJson -}}
{{- else if include "arena.secretsHaveRedisUrl" . -}}
{{- dict "secretKeyRef" (dict "name" (include "arena.sharedSecretName" .) "key" "ARENA_REDIS_URL") | toJson -}}
{{- end -}}
{{- end -}}

{{/*
Whether a defender uses a hosted model ("true" or empty): (dict "root" $ "values" <defender
values>). Its ARENA_DEFENDER_MODEL or ARENA_MODEL, each from the component's env, else
`secrets`, else `config` (the order they win in the pod), is non-empty.
*/}}
{{- define "arena.defenderHostedModel" -}}
{{- $root := .root -}}
{{- $env := .values.env | default dict -}}
{{- $secrets := $root.Values.secrets | default dict -}}
{{- $hosted := false -}}
{{- range $key := list "ARENA_DEFENDER_MODEL" "ARENA_MODEL" -}}
{{- $value := get $root.Values.config $key -}}
{{- if hasKey $secrets $key }}{{ $value = get $secrets $key }}{{ end -}}
{{- if hasKey $env $key }}{{ $value = get $env $key }}{{ end -}}
{{- if kindIs "map" $value -}}
{{- $hosted = true -}}
{{- else if ne (include "arena.envString" $value | trim) "" -}}
{{- $hosted = true -}}
{{- end -}}
{{- end -}}
{{- if $hosted -}}true{{- end -}}
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
{{- /* The attacker's ARENA_TARGET_TOKEN_ARENA is the release's own API token: it may go only to
the release's own defenders (their Services and any publicUrl their cards name). */ -}}
{{- if and (include "arena.authEnabled" .) (not (hasKey $data "ARENA_TARGET_CREDENTIAL_ORIGINS")) -}}
{{- $origins := list -}}
{{- range $key, $name := dict "defender" "defender" "defenderNaive" "defender-naive" -}}
{{- $v := index $root.Values $key -}}
{{- if $v.enabled -}}
{{- $origins = append $origins (printf "http://%s:8081" (include "arena.componentFullname" (dict "root" $root "name" $name))) -}}
{{- if $v.publicUrl -}}
{{- $u := urlParse $v.publicUrl -}}
{{- $origins = append $origins (printf "%s://%s" $u.scheme $u.host) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $origins -}}
{{- $_ := set $data "ARENA_TARGET_CREDENTIAL_ORIGINS" (printf "ARENA=%s" (join " " (uniq $origins))) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.jaeger.enabled (not (hasKey $data "ARENA_TRACE_QUERY_URL")) -}}
{{- $_ := set $data "ARENA_TRACE_QUERY_URL" (printf "http://%s:16686" (include "arena.componentFullname" (dict "root" $root "name" "jaeger"))) -}}
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

{{/*
Whether the arena services have a Redis URL ("true" or empty): the in-chart Redis,
config.ARENA_REDIS_URL, secrets.ARENA_REDIS_URL, or `externalRedis` (the URL is in
existingSecret, which the chart cannot read). An existingSecret alone does not count.
*/}}
{{- define "arena.hasRedis" -}}
{{- if or .Values.redis.enabled .Values.config.ARENA_REDIS_URL (include "arena.secretsHaveRedisUrl" .) .Values.externalRedis -}}true{{- end -}}
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
{{- if and .Values.existingSecret (include "arena.sharedSecretData" .) -}}
{{- fail "set either `secrets` (other than ARENA_TARGET_TOKEN_*) or `existingSecret`, not both (put those variables in the existing Secret)" -}}
{{- end -}}
{{- if and .Values.existingTargetTokenSecret (include "arena.targetTokenSecretData" .) -}}
{{- fail "set either secrets.ARENA_TARGET_TOKEN_* or `existingTargetTokenSecret`, not both (put the tokens in the existing Secret)" -}}
{{- end -}}
{{- if and .Values.existingTargetTokenSecret (eq .Values.existingTargetTokenSecret .Values.existingSecret) -}}
{{- fail "existingTargetTokenSecret must not be existingSecret: the defenders load all of existingSecret, target tokens are for the attacker only" -}}
{{- end -}}
{{- range $key := include "arena.authSettings" . | fromJsonArray -}}
{{- if ne (include "arena.envString" (get $.Values.config $key)) "" -}}
{{- fail (printf "config.%s would put a secret in the ConfigMap: the chart wires the tokens from the auth Secret (auth.enabled, auth.existingSecret)" $key) -}}
{{- end -}}
{{- if ne (include "arena.envString" (get ($.Values.secrets | default dict) $key)) "" -}}
{{- fail (printf "secrets.%s is not wired (the orchestrator would not get it): put the tokens in a Secret of your own and name it in auth.existingSecret" $key) -}}
{{- end -}}
{{- end -}}
{{- if include "arena.authEnabled" . -}}
{{- $auth := .Values.auth | default dict -}}
{{- if ne (include "arena.envString" (get (.Values.secrets | default dict) "ARENA_TARGET_TOKEN_ARENA")) "" -}}
{{- fail "secrets.ARENA_TARGET_TOKEN_ARENA: with auth.enabled the attacker gets it from the auth Secret (auth.targetTokenKey)" -}}
{{- end -}}
{{- if and $auth.existingSecret (eq $auth.existingSecret .Values.existingTargetTokenSecret) -}}
{{- fail "auth.existingSecret must not be existingTargetTokenSecret: the defenders and the orchestrator reference the auth Secret, target tokens are for the attacker only" -}}
{{- end -}}
{{- if and (not $auth.existingSecret) (ne (include "arena.authTargetTokenKey" .) "ARENA_API_TOKENS") -}}
{{- fail "auth.targetTokenKey names a key of auth.existingSecret; the chart's own auth Secret has ARENA_API_TOKENS only" -}}
{{- end -}}
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
{{- fail (printf "%s may run more than one replica but there is no Redis, so replicas would not share tasks: enable redis, set config.ARENA_REDIS_URL (secrets.ARENA_REDIS_URL with a password; externalRedis=true when ARENA_REDIS_URL is in existingSecret), or run one replica (%s.replicas=1, %s.autoscaling.enabled=false)" $key $key $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
