package main

import (
	"os"

	"github.com/volcano-paddle/volcano-paddle/internal/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/controllers/paddleelastic"
)

// The controller manager the local cluster starts inherits this process's
// environment: its elastic-job controller may connect only to etcd pods on
// loopback or the real node's range, never to a simulated pod's IP (KWOK's
// 10.0.0.0/16 leads off the machine). The e2e framework does the same.
func init() {
	if os.Getenv(paddleelastic.NetworksEnv) == "" {
		_ = os.Setenv(paddleelastic.NetworksEnv, "127.0.0.0/8,"+localcluster.PodCIDR)
	}
}
