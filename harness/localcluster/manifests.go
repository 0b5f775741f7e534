package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
)

// ReadManifests splits a multi-document YAML file into objects, skipping
// empty documents.
func ReadManifests(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeManifests(data)
}

// DecodeManifests splits multi-document YAML into objects.
func DecodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]interface{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

// installVolcanoCRDs creates every CRD Volcano ships (both the volcano and
// the jobflow bases: the controller manager waits for JobFlow informers)
// and waits until each is Established.
func installVolcanoCRDs(ctx context.Context, client apiextensionsclient.Interface) error {
	dir, err := VolcanoModuleDir()
	if err != nil {
		return err
	}
	var files []string
	for _, sub := range []string{"config/crd/volcano/bases", "config/crd/jobflow/bases"} {
		matches, err := filepath.Glob(filepath.Join(dir, sub, "*.yaml"))
		if err != nil {
			return err
		}
		files = append(files, matches...)
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs found under %s/config/crd", dir)
	}
	sort.Strings(files)
	var names []string
	for _, f := range files {
		objs, err := ReadManifests(f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, u := range objs {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
			}
			names = append(names, crd.Name)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			established := false
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
}

// installVolcanoWebhooks creates the webhook configurations of Volcano's own
// release manifest and of deploy/paddle (the paddle admission), with their
// rules, selectors and failure policies, but pointing at our webhook manager
// on loopback. It returns the admission paths the manager must enable.
func installVolcanoWebhooks(ctx context.Context, client kubernetes.Interface, baseURL string, caBundle []byte) ([]string, error) {
	dir, err := VolcanoModuleDir()
	if err != nil {
		return nil, err
	}
	objs, err := ReadManifests(filepath.Join(dir, "installer", "volcano-development.yaml"))
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	ours, err := ReadManifests(filepath.Join(root, "deploy", "paddle", "admission-paddle.yaml"))
	if err != nil {
		return nil, err
	}
	objs = append(objs, ours...)
	var paths []string
	rewrite := func(cc *admissionv1.WebhookClientConfig) error {
		if cc.Service == nil || cc.Service.Path == nil {
			return fmt.Errorf("webhook without a service path")
		}
		url := baseURL + *cc.Service.Path
		paths = append(paths, *cc.Service.Path)
		cc.Service, cc.URL, cc.CABundle = nil, &url, caBundle
		return nil
	}
	admission := client.AdmissionregistrationV1()
	for _, u := range objs {
		var err error
		switch u.GetKind() {
		case "MutatingWebhookConfiguration":
			err = createRewritten(ctx, u, rewrite, admission.MutatingWebhookConfigurations().Create)
		case "ValidatingWebhookConfiguration":
			err = createRewritten(ctx, u, rewrite, admission.ValidatingWebhookConfigurations().Create)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no webhook configurations in %s", filepath.Join(dir, "installer", "volcano-development.yaml"))
	}
	sort.Strings(paths)
	return dedupe(paths), nil
}

// createRewritten passes the client config of each of u's webhooks to
// rewrite (both kinds keep them at webhooks[*].clientConfig), converts u
// into the webhook configuration T (mutating or validating) and creates it.
func createRewritten[T any](ctx context.Context, u *unstructured.Unstructured,
	rewrite func(*admissionv1.WebhookClientConfig) error,
	create func(context.Context, *T, metav1.CreateOptions) (*T, error)) error {
	webhooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
	if err != nil {
		return fmt.Errorf("%s: %w", u.GetName(), err)
	}
	conv := runtime.DefaultUnstructuredConverter
	for _, w := range webhooks {
		webhook, ok := w.(map[string]interface{})
		if !ok {
			return fmt.Errorf("%s: a webhook is not an object", u.GetName())
		}
		var cc admissionv1.WebhookClientConfig
		if obj, ok := webhook["clientConfig"].(map[string]interface{}); ok {
			if err := conv.FromUnstructured(obj, &cc); err != nil {
				return fmt.Errorf("%s: %w", u.GetName(), err)
			}
		}
		if err := rewrite(&cc); err != nil {
			return fmt.Errorf("%s: %w", u.GetName(), err)
		}
		if webhook["clientConfig"], err = conv.ToUnstructured(&cc); err != nil {
			return err
		}
	}
	// NestedSlice returned a copy.
	if err := unstructured.SetNestedSlice(u.Object, webhooks, "webhooks"); err != nil {
		return err
	}
	cfg := new(T)
	if err := conv.FromUnstructured(u.Object, cfg); err != nil {
		return err
	}
	if _, err := create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating %s: %w", u.GetName(), err)
	}
	return nil
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

func joinPaths(p []string) string { return strings.Join(p, ",") }
