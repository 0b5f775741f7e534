// Package fakeclients makes informers over fake clientsets start the way they
// do over a real API server: for unit tests, and for the benchmarks' scheduler
// simulator (bench/simsched), which runs Volcano's cache over fake clients.
package fakeclients

import (
	"os"

	clientgofeatures "k8s.io/client-go/features"
)

// ListAndWatch turns client-go's WatchListClient feature off in this process:
// reflectors then list and watch instead of asking for a watch-list stream.
//
// client-go 0.35 enables WatchListClient by default. Its generated informers
// wrap their ListWatch in cache.ToListWatcherWithWatchListSemantics
// (k8s.io/client-go/tools/cache/listwatch.go), which tells the reflector that
// a fake clientset cannot stream. The informers of volcano.sh/apis v1.14.0,
// generated with code-generator 0.34 and compiled into the Volcano v1.15.1
// build (docs/install.md), do not wrap: a reflector over Volcano's fake
// clientset then waits for ever for the initial-events bookmark ("awaiting
// required bookmark event for initial events stream") and WaitForCacheSync
// never returns. Setting KUBE_FEATURE_WatchListClient=false did not help
// (measured, issue 25), so the gate is overridden here. Under client-go 0.34
// (the v1.14.1 build) the feature is off already and this changes nothing.
//
// Call it before any informer starts (TestMain, or before the cache runs).
func ListAndWatch() {
	clientgofeatures.ReplaceFeatureGates(withoutWatchList{clientgofeatures.FeatureGates()})
}

// RunTests is the TestMain of a package whose tests run informers over fake
// clientsets: ListAndWatch, then the tests (m is the *testing.M; taken by
// its method so that the simulator's binaries do not link package testing).
func RunTests(m interface{ Run() int }) {
	ListAndWatch()
	os.Exit(m.Run())
}

// withoutWatchList answers false for WatchListClient and defers every other
// feature to the gates it wraps.
type withoutWatchList struct {
	clientgofeatures.Gates
}

func (g withoutWatchList) Enabled(key clientgofeatures.Feature) bool {
	if key == clientgofeatures.WatchListClient {
		return false
	}
	return g.Gates.Enabled(key)
}
