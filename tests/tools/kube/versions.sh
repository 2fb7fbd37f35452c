# The control plane the Kubernetes tests run on, built from source (build.sh). One place for the
# pins: `make test` uses these; `make test-kube KUBE_VERSION=v1.34.4` swaps only Kubernetes.
#   KUBE_VERSION  k8s.io/kubernetes: kube-apiserver, kube-controller-manager (the current minor's
#                 newest patch; its staging modules are pinned to v0.<minor>.<patch>)
#   ETCD_VERSION  go.etcd.io/etcd/server/v3 (3.6.x; Debian's etcd-server is 3.4)
#   KWOK_VERSION  sigs.k8s.io/kwok: fake kubelets (v0.8.0's go.mod asks Go 1.26.0: the machine's)
#   NPD_VERSION   k8s.io/node-problem-detector: the current release, the chart's (Kubernetes-style
#                 versions after v0.8.20; v1.36.0's go.mod asks Go 1.26.5; the module proxy serves
#                 it by exact version though its version list stops at v1.34.0)
#   NPD_OLD_VERSION  the release before it, which the NPD tests also run (with ../shared/bin's
#                 v0.8.20)
# The real node (../node/build.sh): kubelet and kube-proxy from KUBE_VERSION's module, and
#   CONTAINERD_VERSION  github.com/containerd/containerd/v2: containerd, its runc shim, ctr
#   RUNC_VERSION        github.com/opencontainers/runc (cgo, libseccomp): >= 1.2 applies
#                       recursive read-only mounts (Debian's 1.1.5 cannot)
#   CNI_VERSION         github.com/containernetworking/plugins: bridge, host-local, loopback,
#                       portmap
: "${KUBE_VERSION:=v1.37.2}"
: "${ETCD_VERSION:=v3.6.16}"
: "${KWOK_VERSION:=v0.8.0}"
: "${NPD_VERSION:=v1.36.0}"
: "${NPD_OLD_VERSION:=v1.34.0}"
: "${CONTAINERD_VERSION:=v2.4.2}"
: "${RUNC_VERSION:=v1.5.3}"
: "${CNI_VERSION:=v1.9.1}"
# Outside the clone, keyed by version: a machine builds each once.
: "${CZ_KUBE_CACHE:=/var/cache/cpuzombie/kube}"
