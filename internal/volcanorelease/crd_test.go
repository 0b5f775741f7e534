package volcanorelease

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	busv1alpha1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"
)

// TestCRDSchemasMatchGoTypes: for every Volcano kind our binaries read and
// write, the CRD the embedded release installs (config/crd/volcano/bases of
// its module) and the Go type we compile with (volcano.sh/apis: v1.14.0, for
// the v1.15.1 build the assembled module, docs/install.md) name the same
// fields, at every depth. A field only in the CRD would be dropped when our
// controllers update an object; a field only in Go would be pruned by the API
// server.
func TestCRDSchemasMatchGoTypes(t *testing.T) {
	tests := []struct {
		file    string
		version string
		obj     any
	}{
		{"batch.volcano.sh_jobs.yaml", "v1alpha1", batchv1alpha1.Job{}},
		{"scheduling.volcano.sh_podgroups.yaml", "v1beta1", schedulingv1beta1.PodGroup{}},
		{"scheduling.volcano.sh_queues.yaml", "v1beta1", schedulingv1beta1.Queue{}},
		{"topology.volcano.sh_hypernodes.yaml", "v1alpha1", topologyv1alpha1.HyperNode{}},
		{"bus.volcano.sh_commands.yaml", "v1alpha1", busv1alpha1.Command{}},
	}
	dir, err := ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			schema := crdSchema(t, filepath.Join(dir, "config", "crd", "volcano", "bases", tc.file), tc.version)
			var diffs []string
			compareFields(reflect.TypeOf(tc.obj), schema, reflect.TypeOf(tc.obj).Name(), &diffs)
			if len(diffs) > 0 {
				sort.Strings(diffs)
				t.Errorf("Volcano %s CRD %s (%s) and the Go type %T differ:\n%s", Version(), tc.file, tc.version, tc.obj, strings.Join(diffs, "\n"))
			}
		})
	}
}

// TestCompareFieldsFindsDifferences: the comparison reports a field missing
// on either side, also below a list and a map.
func TestCompareFieldsFindsDifferences(t *testing.T) {
	type item struct {
		A string `json:"a"`
		B string `json:"b,omitempty"`
	}
	type spec struct {
		Items []item            `json:"items"`
		ByKey map[string]item   `json:"byKey"`
		Skip  string            `json:"-"`
		Inner struct{ C int }   `json:"inner"`
		Extra map[string]string `json:"extra"`
	}
	obj := func(props map[string]apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
		return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
	}
	onlyA := obj(map[string]apiextensionsv1.JSONSchemaProps{"a": {Type: "string"}, "z": {Type: "string"}})
	schema := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"items": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: onlyA}},
		"byKey": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: onlyA}},
		"inner": {Type: "object"},
		"extra": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
	})
	var diffs []string
	compareFields(reflect.TypeOf(spec{}), schema, "spec", &diffs)
	sort.Strings(diffs)
	want := []string{
		"spec.byKey[*].b: in Go, not in the CRD",
		"spec.byKey[*].z: in the CRD, not in Go",
		"spec.items[*].b: in Go, not in the CRD",
		"spec.items[*].z: in the CRD, not in Go",
	}
	if !reflect.DeepEqual(diffs, want) {
		t.Errorf("diffs = %q, want %q", diffs, want)
	}
}

func crdSchema(t *testing.T, path, version string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("%s has no schema for version %s", path, version)
	return nil
}

var (
	rawExtension = reflect.TypeOf(runtime.RawExtension{})
	objectMeta   = reflect.TypeOf(metav1.ObjectMeta{})
)

// compareFields walks the Go type and the schema together and records every
// JSON field that only one of them has. It descends where the schema lists
// properties: a schema without them (metadata, quantities, times,
// x-kubernetes-preserve-unknown-fields) is an opaque value to the API server.
func compareFields(goType reflect.Type, schema *apiextensionsv1.JSONSchemaProps, path string, diffs *[]string) {
	for goType.Kind() == reflect.Pointer {
		goType = goType.Elem()
	}
	switch {
	case schema == nil || goType == rawExtension:
		return
	case goType.Kind() == reflect.Slice && goType.Elem().Kind() != reflect.Uint8:
		if schema.Items != nil && schema.Items.Schema != nil {
			compareFields(goType.Elem(), schema.Items.Schema, path+"[*]", diffs)
		}
		return
	case goType.Kind() == reflect.Map:
		if schema.AdditionalProperties != nil && schema.AdditionalProperties.Schema != nil {
			compareFields(goType.Elem(), schema.AdditionalProperties.Schema, path+"[*]", diffs)
		}
		return
	case goType.Kind() != reflect.Struct || len(schema.Properties) == 0:
		return
	}
	goFields := jsonFields(goType)
	for name, ft := range goFields {
		prop, ok := schema.Properties[name]
		if !ok {
			// The metadata of an object embedded in a CRD (a pod template)
			// keeps only name, namespace, labels, annotations and finalizers
			// (controller-gen's embedded ObjectMeta); the API server prunes
			// the rest, as for every CRD with a pod template.
			if goType != objectMeta {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s: in Go, not in the CRD", path, name))
			}
			continue
		}
		compareFields(ft, &prop, path+"."+name, diffs)
	}
	for name := range schema.Properties {
		if _, ok := goFields[name]; !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s.%s: in the CRD, not in Go", path, name))
		}
	}
}

// jsonFields are a struct's fields by JSON name, embedded structs inlined as
// encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, t := range jsonFields(ft) {
					out[n] = t
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
