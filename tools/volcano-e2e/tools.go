//go:build tools

// Package tools pins Volcano v1.15.1's own end-to-end suite
// test/e2e/schedulingaction, which `make test-volcano-e2e` compiles with
// `go test -c` from this module and runs against the local cluster
// (hack/volcano-e2e). The imports below are the suite's package and what
// its test files import beyond it, so that go.mod and go.sum list
// everything the test binary needs.
package tools

import (
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "volcano.sh/apis/pkg/client/clientset/versioned"
	_ "volcano.sh/volcano/test/e2e/schedulingaction"
	_ "volcano.sh/volcano/test/e2e/util"
)
