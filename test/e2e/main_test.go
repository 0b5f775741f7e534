// Package e2e tests volcano-paddle end to end on a real local control plane:
// etcd, kube-apiserver, kube-controller-manager, KWOK nodes and our Volcano
// builds (see harness/localcluster). Run one test with
//
//	make test-e2e E2E_RUN=TestGangAllOrNothing
package e2e

import (
	"os"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

func TestMain(m *testing.M) {
	// The crash test re-runs this binary as the owner of a cluster and
	// kills it; in that role it runs no tests.
	if os.Getenv(ownerHelperEnv) != "" {
		runOwnerHelper()
		return
	}
	framework.Main(m)
}
