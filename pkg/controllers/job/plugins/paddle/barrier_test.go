package paddle

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/internal/dnsbarrier"
	"github.com/volcano-paddle/volcano-paddle/internal/dnsbarrier/dnstest"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// The init container runs paddle-barrier with the peers of the job: the
// names it waits for are the DNS names the pods get from their hostname and
// subdomain, so the barrier passes exactly when every pod of the gang has
// its record.
func TestBarrierWaitsForEveryPodsDNSName(t *testing.T) {
	job := newJob("ml", "wd", []string{"--gloo=1", "--barrier-timeout=20s"}, testbuilders.PaddleTask{Name: "ps", Replicas: 2}, testbuilders.PaddleTask{Name: "worker", Replicas: 3})
	_, pods := mustRun(t, job)
	ic := podNamed(t, pods, "wd-worker-1").Spec.InitContainers
	if len(ic) == 0 || ic[0].Name != paddlejob.BarrierContainerName {
		t.Fatalf("init containers = %+v", ic)
	}
	barrier := ic[0]
	if len(barrier.Command) != 1 || barrier.Command[0] != paddlejob.BarrierBinary || barrier.Image != paddlejob.DefaultBarrierImage {
		t.Errorf("barrier runs %v from %s, want %s from %s", barrier.Command, barrier.Image, paddlejob.BarrierBinary, paddlejob.DefaultBarrierImage)
	}
	env := envOf(&barrier)
	if env["PADDLE_BARRIER_TIMEOUT_SECONDS"] != "20" {
		t.Errorf("PADDLE_BARRIER_TIMEOUT_SECONDS = %q", env["PADDLE_BARRIER_TIMEOUT_SECONDS"])
	}
	hosts := strings.Split(env["PADDLE_BARRIER_HOSTS"], ",")

	// Every pod's name (hostname.subdomain) is among the hosts, and nothing
	// else is.
	var podNames []string
	for _, p := range pods {
		podNames = append(podNames, p.Spec.Hostname+"."+p.Spec.Subdomain)
	}
	if !slices.Equal(slices.Sorted(slices.Values(hosts)), slices.Sorted(slices.Values(podNames))) {
		t.Fatalf("barrier hosts %v, pods' DNS names %v", hosts, podNames)
	}

	// Run the real barrier logic on those env values against a DNS server
	// that answers like CoreDNS: it passes only when the last pod's record
	// is there.
	s := dnstest.Start(t)
	const search = "ml.svc.cluster.local"
	for i, p := range pods[:len(pods)-1] {
		s.Set(dnsbarrier.FQDN(p.Spec.Hostname+"."+p.Spec.Subdomain, search), "198.18.0."+strconv.Itoa(10+i))
	}
	last := pods[len(pods)-1]
	cfg := dnsbarrier.Config{Hosts: hosts, Search: search, Servers: []string{s.Addr}, Timeout: 500 * time.Millisecond, Interval: 50 * time.Millisecond}
	if _, err := dnsbarrier.Wait(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), last.Spec.Hostname) {
		t.Fatalf("barrier with %s missing: %v", last.Name, err)
	}
	s.Set(dnsbarrier.FQDN(last.Spec.Hostname+"."+last.Spec.Subdomain, search), "198.18.0.99")
	cfg.Timeout = 5 * time.Second
	res, err := dnsbarrier.Wait(context.Background(), cfg)
	if err != nil {
		t.Fatalf("barrier with every record there: %v", err)
	}
	if len(res.Addresses) != len(pods) {
		t.Errorf("resolved %d of %d peers", len(res.Addresses), len(pods))
	}
}

func TestBarrierOffAndCustomImage(t *testing.T) {
	job := newJob("ml", "wd", []string{"--barrier=false"}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	_, pods := mustRun(t, job)
	for _, p := range pods {
		if len(p.Spec.InitContainers) != 0 {
			t.Errorf("%s has init containers with --barrier=false: %+v", p.Name, p.Spec.InitContainers)
		}
	}
	job = newJob("ml", "wd", []string{"--barrier-image=registry.example/paddle-barrier:v1"}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	_, pods = mustRun(t, job)
	if img := pods[0].Spec.InitContainers[0].Image; img != "registry.example/paddle-barrier:v1" {
		t.Errorf("barrier image = %s", img)
	}
}
