//go:build tools

// Package tools pins the control-plane commands of the Kubernetes 1.35 local
// cluster (make VOLCANO=v1.15.1). The kubelet of the real node stays the
// 1.34 one of tools/controlplane (docs/install.md: version skew).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
