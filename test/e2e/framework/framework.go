// Package framework holds what the e2e tests share: one local cluster per
// test binary, a namespace per test, Volcano Job builders and polling waits.
package framework

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
)

var (
	failedMu      sync.Mutex
	anyFailed     bool
	stopOnSignals sync.Once
)

// sharedCluster is a cluster the tests of this binary share: started on
// first use, stopped by Main.
type sharedCluster struct {
	what string // "local cluster", for messages
	opts localcluster.Options

	mu  sync.Mutex
	c   *localcluster.Cluster
	err error // a failed start, reported to every test that asks
}

var (
	defaultCluster = &sharedCluster{what: "local cluster", opts: localcluster.Options{Name: "e2e"}}
	// The default KWOK topology plus real-0, CoreDNS with `cache 30` and
	// kubernetes `ttl 30`.
	realNodeCluster = &sharedCluster{what: "local cluster with the real node", opts: localcluster.Options{
		Name: "e2e-real", RealNode: &localcluster.RealNodeOptions{CacheSeconds: 30, TTLSeconds: 30},
	}}
)

// get returns the cluster, starting it if no test has yet, and checks it
// after the test (afterTest).
func (s *sharedCluster) get(t *testing.T) *localcluster.Cluster {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil && s.err == nil {
		opts := s.opts
		opts.Logf = t.Logf
		s.c, s.err = localcluster.Start(context.Background(), opts)
		if s.err == nil {
			handleSignals(s.c)
		}
	}
	if s.err != nil {
		t.Fatalf("%s: %v", s.what, s.err)
	}
	c := s.c
	t.Cleanup(func() { afterTest(t, c) })
	return c
}

// stop stops the cluster if a test started it; c is nil when none did.
func (s *sharedCluster) stop() (c *localcluster.Cluster, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return nil, nil
	}
	return s.c, s.c.Stop()
}

// Main runs the tests and then stops the shared clusters. Logs are removed
// after a clean run and kept (with their path printed) after a failure.
func Main(m *testing.M) {
	code := m.Run()
	for _, s := range []*sharedCluster{defaultCluster, realNodeCluster} {
		if c, err := s.stop(); c != nil {
			code = stopped(s.what, c, err, code)
		}
	}
	os.Exit(code)
}

// stopped reports a stop of cluster c that ended with err, and removes the
// cluster's logs when the run is clean (code 0, no test failed) or says
// where they are kept; it returns the exit code, 1 once a stop failed.
func stopped(what string, c *localcluster.Cluster, err error, code int) int {
	if err != nil {
		fmt.Fprintf(os.Stderr, "stopping the %s: %v\n", what, err)
		code = 1
	}
	failedMu.Lock()
	failed := anyFailed
	failedMu.Unlock()
	if code == 0 && !failed {
		_ = c.RemoveLogs()
	} else {
		fmt.Fprintf(os.Stderr, "%s: component logs kept in %s\n", what, c.LogDir)
	}
	return code
}

// Cluster returns the cluster shared by the tests of this binary, starting
// it on first use with the default topology.
func Cluster(t *testing.T) *localcluster.Cluster {
	t.Helper()
	return defaultCluster.get(t)
}

// afterTest keeps the logs of a shared cluster when a test failed and fails
// the test when a component died during it.
func afterTest(t *testing.T, c *localcluster.Cluster) {
	if t.Failed() {
		failedMu.Lock()
		anyFailed = true
		failedMu.Unlock()
		t.Logf("component logs: %s", c.LogDir)
	}
	if err := c.Healthy(); err != nil {
		t.Errorf("after %s: %v", t.Name(), err)
	}
}

// StartCluster starts a private cluster for one test, stopped at its end.
func StartCluster(t *testing.T, opts localcluster.Options) *localcluster.Cluster {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	if opts.Name == "" {
		opts.Name = strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	}
	c, err := localcluster.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("local cluster: %v", err)
	}
	handleSignals(c)
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping cluster: %v", err)
		}
		if t.Failed() {
			t.Logf("component logs kept in %s", c.LogDir)
		} else {
			_ = c.RemoveLogs()
		}
	})
	return c
}

var (
	signalMu       sync.Mutex
	signalClusters []*localcluster.Cluster
)

// handleSignals stops clusters when the test binary is interrupted, so an
// interrupted run leaves nothing behind (a killed one relies on the
// components' parent-death signal).
func handleSignals(c *localcluster.Cluster) {
	signalMu.Lock()
	signalClusters = append(signalClusters, c)
	signalMu.Unlock()
	stopOnSignals.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			s := <-ch
			fmt.Fprintf(os.Stderr, "\n%v: stopping local clusters\n", s)
			signalMu.Lock()
			for _, c := range signalClusters {
				_ = c.Stop()
			}
			signalMu.Unlock()
			os.Exit(130)
		}()
	})
}

// ClusterNamespace is the shared cluster (Cluster) and a fresh namespace in
// it (Namespace), the start of most tests.
func ClusterNamespace(t *testing.T) (*localcluster.Cluster, string) {
	t.Helper()
	c := Cluster(t)
	return c, Namespace(t, c)
}

// Namespace creates a namespace for one test and deletes it afterwards.
func Namespace(t *testing.T, c *localcluster.Cluster) string {
	t.Helper()
	name := "e2e-" + rand.String(6)
	ctx := context.Background()
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		start := time.Now()
		DeleteNamespaceJobs(t, c, name)
		t.Logf("namespace %s cleaned up in %s", name, time.Since(start).Round(100*time.Millisecond))
	})
	return name
}

// DeleteNamespaceJobs deletes every Volcano Job and pod of the namespace and
// waits for them to go, so the next test starts on an empty cluster.
func DeleteNamespaceJobs(t *testing.T, c *localcluster.Cluster, ns string) {
	t.Helper()
	ctx := context.Background()
	bg := metav1.DeletePropagationBackground
	if err := c.Volcano.BatchV1alpha1().Jobs(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting jobs in %s: %v", ns, err)
	}
	if err := c.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting pods in %s: %v", ns, err)
	}
	err := Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		jobs, err := c.Volcano.BatchV1alpha1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(jobs.Items) == 0 && len(pods.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("cleaning up namespace %s: %v", ns, err)
	}
	_ = c.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
}

// Poll checks cond every 100ms until it holds, it errors, or timeout passes.
// The last transient error is reported with a timeout.
func Poll(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last error: %v)", err, last)
	}
	return err
}
