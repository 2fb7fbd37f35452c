{{/* Common labels. */}}
{{- define "cpuzombie.labels" -}}
app.kubernetes.io/name: cpuzombie
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "cpuzombie.selector" -}}
app.kubernetes.io/name: cpuzombie
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "cpuzombie.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "cpuzombie.sa" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ .Values.serviceAccount.name }}
{{- end -}}

{{- define "cpuzombie.remediatorSA" -}}
{{ .Values.serviceAccount.remediatorName }}
{{- end -}}

{{- define "cpuzombie.remediatorUser" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "cpuzombie.remediatorSA" . }}
{{- end -}}

{{/* The budget Leases' names when max_unavailable is a count N: cpuzombie-slot-0..N-1, comma
     separated; "" for a percentage (the number of slots then follows the node count). */}}
{{- define "cpuzombie.slotNames" -}}
{{- $m := toString .Values.config.remediation.max_unavailable -}}
{{- if not (hasSuffix "%" $m) -}}
{{- $names := list -}}
{{- range $i := until (atoi $m) -}}
{{- $names = append $names (printf "cpuzombie-slot-%d" $i) -}}
{{- end -}}
{{- join ", " $names -}}
{{- end -}}
{{- end -}}

{{/* config.remediation.reclaim: "off", "memory.reclaim" or "drop_caches". */}}
{{- define "cpuzombie.reclaim" -}}
{{- toString (.Values.config.remediation.reclaim | default "off") -}}
{{- end -}}

{{- define "cpuzombie.remediating" -}}
{{- if ne (toString .Values.config.remediation.mode) "off" }}true{{ end -}}
{{- end -}}

{{/* The NPD configs that run: config/npd/cpuzombie-<check>.json for every enabled check. */}}
{{- define "cpuzombie.npdFiles" -}}
{{- $files := list -}}
{{- range $check, $on := .Values.npd.checks -}}
{{- if $on -}}
{{- $f := printf "files/npd/cpuzombie-%s.json" $check -}}
{{- if not ($.Files.Get $f) -}}
{{- fail (printf "npd.checks.%s is on but the chart has no %s (config/npd)" $check $f) -}}
{{- end -}}
{{- $files = append $files (printf "cpuzombie-%s.json" $check) -}}
{{- end -}}
{{- end -}}
{{- join "," $files -}}
{{- end -}}

{{/* /etc/cpuzombie/cpuzombie.yaml: the user's thresholds plus what the pod layout fixes. */}}
{{- define "cpuzombie.config" -}}
# Rendered by the cpuzombie Helm chart from its values (config:); keys: config/cpuzombie.yaml.
paths:
  proc: /host/proc
  sys: /host/sys
  state: /var/lib/cpuzombie
  run: /run/cpuzombie
kubernetes:
  node_name: ""                # $NODE_NAME from the downward API
  kubeconfig: ""               # in-cluster service account
{{- $cfg := deepCopy .Values.config }}
{{- /* the node agent never remediates: the remediator Deployment does (templates/remediator.yaml) */}}
{{- $agent := merge (dict "set_conditions" (eq .Values.mode "standalone") "remediate" false) (index $cfg "agent" | default dict) }}
{{- $_ := set $cfg "agent" $agent }}
{{- $cpu := merge (dict "profile" .Values.agent.profileBursts) (index $cfg "cpu" | default dict) }}
{{- $_ := set $cfg "cpu" $cpu }}
{{- if not .Values.agent.zombieCensus }}
{{- $memcg := merge (dict "census_interval" "0") (index $cfg "memcg" | default dict) }}
{{- $_ := set $cfg "memcg" $memcg }}
{{- end }}
{{- range $section, $body := $cfg }}
{{ $section }}:
{{- toYaml $body | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "cpuzombie.env" -}}
- name: NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
{{- end -}}

{{/* Every container: root (the state dir is root's on the host), no capability unless named,
     no privilege escalation, read-only image. */}}
{{- define "cpuzombie.securityContext" -}}
runAsUser: 0
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
  {{- with .add }}
  add: [{{ join ", " . }}]
  {{- end }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The host paths both containers read (roots) or write (state, run). */}}
{{- define "cpuzombie.hostMounts" -}}
- name: host-proc
  mountPath: /host/proc
  readOnly: true
- name: host-sys
  mountPath: /host/sys
  readOnly: true
- name: state
  mountPath: /var/lib/cpuzombie
- name: run
  mountPath: /run/cpuzombie
{{- end -}}

{{/* Host directories the agent writes only when configured: the node_exporter textfile
     directory and kured's reboot sentinel directory. One per line. */}}
{{- define "cpuzombie.extraHostDirs" -}}
{{- with .Values.config.agent.metrics_textfile }}{{ dir . }}{{ "\n" }}{{ end -}}
{{- with .Values.config.remediation.reboot_sentinel }}{{ dir . }}{{ "\n" }}{{ end -}}
{{- end -}}

{{/* "true" when a fleet guard keeps state on the Lease cpuzombie-guard: breaker_max or drain_gap on. */}}
{{- define "cpuzombie.guardLease" -}}
{{- $r := .Values.config.remediation -}}
{{- if or (gt (int ($r.breaker_max | default 0)) 0) (not (regexMatch "^0+(ms|s|m|h)?$" (toString ($r.drain_gap | default "0s")))) -}}
true
{{- end -}}
{{- end -}}
