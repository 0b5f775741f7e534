package localcluster

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Every webhook of Volcano's release manifest and of deploy/paddle is
// created pointing at the webhook manager on loopback, with the CA bundle,
// and its path is among those returned.
func TestInstallVolcanoWebhooksPointsAtLoopback(t *testing.T) {
	client := fake.NewClientset()
	const base = "https://127.0.0.1:8443"
	ca := []byte("test CA")
	paths, err := installVolcanoWebhooks(context.Background(), client, base, ca)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/jobs/paddle/mutate", "/jobs/paddle/validate", "/pods/paddle/validate", "/jobs/validate"} {
		if !slices.Contains(paths, p) {
			t.Errorf("paths %v lack %s", paths, p)
		}
	}
	admission := client.AdmissionregistrationV1()
	mutating, err := admission.MutatingWebhookConfigurations().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	validating, err := admission.ValidatingWebhookConfigurations().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(mutating.Items) == 0 || len(validating.Items) == 0 {
		t.Fatalf("%d mutating and %d validating configurations, want some of each", len(mutating.Items), len(validating.Items))
	}
	n := 0
	check := func(kind, name string, svc bool, url *string, bundle []byte) {
		n++
		if svc || url == nil || len(*url) <= len(base) || (*url)[:len(base)] != base || string(bundle) != string(ca) {
			t.Errorf("%s %s: service %v, url %v, CA %q; want only a URL under %s and the CA", kind, name, svc, url, bundle, base)
			return
		}
		if !slices.Contains(paths, (*url)[len(base):]) {
			t.Errorf("%s %s: path of %s not returned", kind, name, *url)
		}
	}
	for _, c := range mutating.Items {
		for _, w := range c.Webhooks {
			check("mutating", w.Name, w.ClientConfig.Service != nil, w.ClientConfig.URL, w.ClientConfig.CABundle)
		}
	}
	for _, c := range validating.Items {
		for _, w := range c.Webhooks {
			check("validating", w.Name, w.ClientConfig.Service != nil, w.ClientConfig.URL, w.ClientConfig.CABundle)
		}
	}
	t.Logf("%d webhooks, %d paths", n, len(paths))
}
