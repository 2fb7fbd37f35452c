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

{{/* remediation.lease_namespace: the value, "" = the release namespace (rendered into the
     pods' config, so the binary never falls back on its own). */}}
{{- define "cpuzombie.leaseNamespace" -}}
{{- .Values.config.remediation.lease_namespace | default .Release.Namespace -}}
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
  pod_logs: {{ if .Values.agent.podNames }}/host/var/log/pods{{ else }}""{{ end }}
kubernetes:
  node_name: ""                # $NODE_NAME from the downward API
  kubeconfig: ""               # in-cluster service account
{{- $cfg := deepCopy .Values.config }}
{{- /* the node agent never remediates: the remediator Deployment does (templates/remediator.yaml) */}}
{{- $agent := merge (dict "set_conditions" (eq .Values.mode "standalone") "remediate" false) (index $cfg "agent" | default dict) }}
{{- $_ := set $cfg "agent" $agent }}
{{- $cpu := merge (dict "profile" .Values.agent.profileBursts) (index $cfg "cpu" | default dict) }}
{{- $_ := set $cfg "cpu" $cpu }}
{{- $rem := index $cfg "remediation" | default dict }}
{{- $_ := set $rem "lease_namespace" (include "cpuzombie.leaseNamespace" .) }}
{{- $_ := set $cfg "remediation" $rem }}
{{- if not .Values.agent.zombieCensus }}
{{- $memcg := merge (dict "census_interval" "0") (index $cfg "memcg" | default dict) }}
{{- $_ := set $cfg "memcg" $memcg }}
{{- end }}
{{- /* npd mode: a check NPD does not run (npd.checks.<x> false) owns no condition, and the
     agent removes its type from the node (left by an earlier release that ran it) */}}
{{- if eq .Values.mode "npd" }}
{{- range $check := list "memcg" "cpu" "ena" }}
{{- if not (index $.Values.npd.checks $check) }}
{{- $sec := merge (dict "condition" false) (index $cfg $check | default dict) }}
{{- $_ := set $sec "condition" false }}
{{- $_ := set $cfg $check $sec }}
{{- end }}
{{- end }}
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
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end -}}

{{/* The node containers' uid (NPD's and the agent's: the checks read the agent's 0600 run
     files, so one uid for both): 0 while a feature needs root, else 65534. A capability added
     is effective only for uid 0 (no ambient capabilities; no_new_privs keeps file capabilities
     out): burst profiles, the census, kernel stacks, kmsg; reclaim writes root's sysctl and
     cgroup files; a textfile or sentinel lands in a host directory the kubelet makes root's. */}}
{{- define "cpuzombie.nodeUid" -}}
{{- $a := .Values.agent -}}
{{- $c := .Values.config -}}
{{- $root := or $a.profileBursts $a.zombieCensus $a.readKernelStacks (ne (include "cpuzombie.reclaim" .) "off") (index ($c.agent | default dict) "kmsg") (index ($c.agent | default dict) "metrics_textfile") (index ($c.remediation | default dict) "reboot_sentinel") -}}
{{- if $root }}0{{ else }}65534{{ end -}}
{{- end -}}

{{/* Every container: root unless .uid names another, .gid its group (default: the uid's), no
     capability unless named, no privilege escalation, read-only image. */}}
{{- define "cpuzombie.securityContext" -}}
{{- if .uid }}
runAsUser: {{ .uid }}
runAsGroup: {{ .gid | default .uid }}
runAsNonRoot: true
{{- else }}
runAsUser: 0
{{- with .gid }}
runAsGroup: {{ . }}
{{- end }}
{{- end }}
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

{{/* The subtrees of the host's /sys that the checks and the agent read, at the same places
     under /host/sys (one per line): fs/cgroup always (check memcg, the census, the canary, the
     subtree names); class/net and the devices its relative symlinks (../../devices/...) point
     into, for the NIC IRQ map of check cpu and for check ena / ena-allowance (devices also holds
     system/cpu/possible, check cpu). Standalone, the agent runs every check. Nothing else of
     /sys: not kernel/ (security, tracing, debug), firmware/ (ACPI tables, EFI variables, DMI
     serials), module/, bus/, block/, power/. (The census's BTF is the container's own
     /sys/kernel/btf, which the runtime mounts.) */}}
{{- define "cpuzombie.sysSubtrees" -}}
{{- $c := .Values.npd.checks -}}
{{- $all := ne .Values.mode "npd" -}}
fs/cgroup
{{ if or $all (index $c "cpu") (index $c "ena") (index $c "ena-allowance") -}}
class/net
devices
{{ end -}}
{{- end -}}

{{/* The host paths both containers read (roots, and NPD's the run dir) or write (state, the
     agent's run dir); call with (dict "ctx" . "agent" BOOL). The roots are read-only
     recursively (Kubernetes 1.33+, the runtime must support it: the pod fails to start
     otherwise): a plain readOnly mount of /sys leaves
     /sys/fs/cgroup below it writable to uid 0 (kill, freeze or throttle any pod), and the same
     for what is mounted below /proc. /sys only in the subtrees read (cpuzombie.sysSubtrees);
     /proc whole: the agent reads per-PID files (stat, cgroup, comm of every task) and
     /proc/stat, interrupts, softirqs, loadavg, pressure, meminfo, 1/mountinfo. The agent's
     fs/cgroup is the writable one with remediation.reclaim memory.reclaim (daemonset.yaml). */}}
{{- define "cpuzombie.hostMounts" -}}
{{- $rw := and .agent (eq (include "cpuzombie.reclaim" .ctx) "memory.reclaim") -}}
- name: host-proc
  mountPath: /host/proc
  readOnly: true
  recursiveReadOnly: Enabled
  mountPropagation: None
{{- range $sub := include "cpuzombie.sysSubtrees" .ctx | splitList "\n" | compact }}
{{- if not (and $rw (eq $sub "fs/cgroup")) }}
- name: host-sys-{{ $sub | replace "/" "-" }}
  mountPath: /host/sys/{{ $sub }}
  readOnly: true
  recursiveReadOnly: Enabled
  mountPropagation: None
{{- end }}
{{- end }}
- name: state
  mountPath: /var/lib/cpuzombie
{{- /* the agent writes the run dir; the checks in NPD's container only read it */}}
- name: run
  mountPath: /run/cpuzombie
{{- if not .agent }}
  readOnly: true
  recursiveReadOnly: Enabled
  mountPropagation: None
{{- end }}
{{- end -}}

{{/* Host directories the agent writes only when configured: the node_exporter textfile
     directory and kured's reboot sentinel directory, each the file's own directory only, and
     none when it is the state directory or below it (mounted already). One per line, once each.
     values.schema.json (and the binary's config check) allow only /var/lib/cpuzombie and below
     it, and for the textfile one directory directly below node_exporter's. */}}
{{- define "cpuzombie.extraHostDirs" -}}
{{- $state := trimSuffix "/" .Values.hostPaths.state -}}
{{- $dirs := list -}}
{{- range $f := list .Values.config.agent.metrics_textfile .Values.config.remediation.reboot_sentinel -}}
{{- if $f -}}
{{- $d := dir $f -}}
{{- if not (or (eq $d $state) (hasPrefix (printf "%s/" $state) $d)) -}}
{{- $dirs = append $dirs $d -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $d := $dirs | uniq }}{{ $d }}{{ "\n" }}{{ end -}}
{{- end -}}

{{/* The volume of one of those host directories: a DNS label (a volume name is one, 63 at most:
     node_exporter's own directory has an underscore), readable, and unique by a hash of the
     path (two paths that read alike get two names). */}}
{{- define "cpuzombie.hostDirVolume" -}}
{{- $n := regexReplaceAll "[^a-z0-9]+" (. | trimPrefix "/" | lower) "-" | trunc 45 | trimSuffix "-" -}}
host-{{ $n }}-{{ . | sha256sum | trunc 8 }}
{{- end -}}

{{/* Whether the agent container talks to the API server: standalone (it sets the conditions),
     the kured hand-off after a drain (it reads its node), reclaim (its Events). */}}
{{- define "cpuzombie.agentUsesAPI" -}}
{{- if or (eq .Values.mode "standalone") (ne (include "cpuzombie.reclaim" .) "off") (and (eq (toString .Values.config.remediation.mode) "drain") .Values.config.remediation.reboot_sentinel) (include "cpuzombie.npdChecksOff" .) }}true{{ end -}}
{{- end -}}

{{/* npd mode with a condition check turned off: the agent removes that condition type from its
     node (kube_agent.c), so it needs its token. */}}
{{- define "cpuzombie.npdChecksOff" -}}
{{- if eq .Values.mode "npd" }}{{ range $check := list "memcg" "cpu" "ena" }}{{ if not (index $.Values.npd.checks $check) }}true{{ end }}{{ end }}{{ end -}}
{{- end -}}

{{/* The ServiceAccount token, only in the containers that call the API server (the pod has
     automountServiceAccountToken false): what the automatic mount would give, as a projected
     volume. */}}
{{- define "cpuzombie.tokenMount" -}}
- name: kube-api-access
  mountPath: /var/run/secrets/kubernetes.io/serviceaccount
  readOnly: true
{{- end -}}

{{- define "cpuzombie.tokenVolume" -}}
- name: kube-api-access
  projected:
    defaultMode: 0444
    sources:
      - serviceAccountToken:
          expirationSeconds: 3607
          path: token
      - configMap:
          name: kube-root-ca.crt
          items:
            - key: ca.crt
              path: ca.crt
      - downwardAPI:
          items:
            - path: namespace
              fieldRef:
                fieldPath: metadata.namespace
{{- end -}}

{{/* "true" when a fleet guard keeps state on the Lease cpuzombie-guard: breaker_max or drain_gap on. */}}
{{- define "cpuzombie.guardLease" -}}
{{- $r := .Values.config.remediation -}}
{{- if or (gt (int ($r.breaker_max | default 0)) 0) (not (regexMatch "^0+(ms|s|m|h)?$" (toString ($r.drain_gap | default "0s")))) -}}
true
{{- end -}}
{{- end -}}
