package framework

import (
	"testing"

	"github.com/volcano-paddle/volcano-paddle/harness/etcdtest"
)

// StartEtcd runs a real etcd for tests that need an elastic Paddle job's
// etcd (etcdtest.Start): the local cluster's pods are simulated and their
// IPs are not ours to send traffic to.
func StartEtcd(t *testing.T) string { return etcdtest.Start(t) }
