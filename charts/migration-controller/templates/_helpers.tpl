{{/* Names and labels shared by every template. */}}

{{- define "mc.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-<chart>, or the release name when it already contains the chart name. */}}
{{- define "mc.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mc.labels" -}}
{{ include "mc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "mc.serviceAccountName" -}}
{{- default (include "mc.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "mc.webhookServiceName" -}}
{{- printf "%s-webhook" (include "mc.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mc.metricsServiceName" -}}
{{- printf "%s-metrics" (include "mc.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mc.webhookSecretName" -}}
{{- default (printf "%s-webhook-tls" (include "mc.fullname" .)) .Values.webhook.certificate.secretName -}}
{{- end -}}

{{/* Names match src/webhook/config.ts DEFAULT_NAMES for the default release (fullname migration-controller). */}}
{{- define "mc.validatingWebhookName" -}}
{{- printf "%s-validating" (include "mc.fullname" .) -}}
{{- end -}}

{{- define "mc.mutatingWebhookName" -}}
{{- printf "%s-early" (include "mc.fullname" .) -}}
{{- end -}}

{{- define "mc.certificateName" -}}
{{- printf "%s-webhook" (include "mc.fullname" .) -}}
{{- end -}}

{{/*
The controller's image. Refused with an explanation instead of rendered:
- Cozystack's own controller's repository: its Go binary takes other flags and serves these kinds
  differently, so a missed override would run the wrong controller (or crash-loop);
- a placeholder copied from the docs (example.com/.org/.net hosts, REPLACE/CHANGEME, <…>, an elided
  digest), which would leave the Pods in ImagePullBackOff.
*/}}
{{- define "mc.image" -}}
{{- $repo := .Values.image.repository -}}
{{- $how := "build it with `npm run image`, push it to a registry your nodes pull from and set image.repository (and image.digest) to where you pushed it (docs/install.md, The image)" -}}
{{- if or (eq $repo "ghcr.io/cozystack/cozystack/migration-controller") (hasPrefix "ghcr.io/cozystack/cozystack/migration-controller:" $repo) -}}
{{- fail (printf "image.repository %q is the image of Cozystack's own migration controller (a different program, in Go), not this one: %s" $repo $how) -}}
{{- end -}}
{{- if regexMatch "(?i)(^|[./])example[.](com|org|net)(/|:|$)|replace|changeme|[<>…]" $repo -}}
{{- fail (printf "image.repository %q is a placeholder, not an image your nodes can pull: %s" $repo $how) -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Annotation asking cert-manager's cainjector to fill caBundle (certManager mode only). */}}
{{- define "mc.webhookAnnotations" -}}
{{- if eq .Values.webhook.certificate.mode "certManager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "mc.certificateName" .) }}
{{- end }}
{{- end -}}
