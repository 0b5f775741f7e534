// Package images builds the container images of volcano-paddle's binaries
// without a container engine: one layer holding a static binary plus the
// files a non-root image needs, an OCI config with our labels, written as a
// docker-archive tarball (what `ctr images import` and `docker load` read)
// with go-containerregistry, and pushed with it when asked.
package images

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// NonRootUID is the user every image runs as (distroless's nonroot).
const NonRootUID = 65532

// Spec describes one image.
type Spec struct {
	// Name is the image's repository name below the registry and the
	// binary's name in /usr/local/bin.
	Name string
	// Binary is the file put at /usr/local/bin/<File>.
	Binary string
	// File is the binary's name in the image; default Name.
	File string
	// Entrypoint defaults to /usr/local/bin/<File>.
	Entrypoint []string
	// User defaults to NonRootUID.
	User string
	// Labels are added to the OCI labels every image gets.
	Labels map[string]string
}

// Meta is what every image is stamped with.
type Meta struct {
	Registry, Tag             string
	Version, Revision, Source string
	Created                   time.Time
}

// Built is one image written to disk, as listed in the manifest file.
type Built struct {
	Name string `json:"name"`
	Ref  string `json:"ref"`
	File string `json:"file"`
	// Digest is the image's manifest digest.
	Digest string `json:"digest"`
}

// ManifestFile lists what Build wrote, in the output folder.
const ManifestFile = "images.json"

// Image assembles the image of s.
func Image(s Spec, m Meta) (v1.Image, error) {
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, err
	}
	if s.File == "" {
		s.File = s.Name
	}
	layer, err := rootfsLayer(s.File, bin, m.Created)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: m.Created}
	entry := s.Entrypoint
	if len(entry) == 0 {
		entry = []string{"/usr/local/bin/" + s.File}
	}
	user := s.User
	if user == "" {
		user = fmt.Sprintf("%d:%d", NonRootUID, NonRootUID)
	}
	labels := map[string]string{
		"org.opencontainers.image.title":    s.Name,
		"org.opencontainers.image.version":  m.Version,
		"org.opencontainers.image.revision": m.Revision,
		"org.opencontainers.image.created":  m.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.source":   m.Source,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	for k, v := range s.Labels {
		labels[k] = v
	}
	cf.Config = v1.Config{
		Entrypoint: entry,
		User:       user,
		Env:        []string{"PATH=/usr/local/bin:/bin"},
		WorkingDir: "/",
		Labels:     labels,
	}
	return mutate.ConfigFile(img, cf)
}

// rootfsLayer is the one layer: /usr/local/bin/<file>, /etc/passwd and
// /etc/group naming root and nonroot (tools and libraries that look the user
// up find it), and a world-writable /tmp.
func rootfsLayer(file string, bin []byte, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(p string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, ModTime: created})
	}
	put := func(p string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(data)), ModTime: created}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRootUID, NonRootUID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRootUID)
	steps := []func() error{
		func() error { return dir("etc", 0o755) },
		func() error { return put("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return put("etc/group", 0o644, []byte(group)) },
		func() error { return dir("tmp", 0o1777) },
		func() error { return dir("usr", 0o755) },
		func() error { return dir("usr/local", 0o755) },
		func() error { return dir("usr/local/bin", 0o755) },
		func() error { return put("usr/local/bin/"+file, 0o755, bin) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

// Ref is the reference of an image named name.
func Ref(m Meta, imageName string) (name.Tag, error) {
	return name.NewTag(fmt.Sprintf("%s/%s:%s", m.Registry, imageName, m.Tag))
}

// Build writes each image to outDir/<name>.tar (docker-archive) and the
// manifest file listing them; with push it also pushes each to its registry
// with the credentials of the local Docker config.
func Build(specs []Spec, m Meta, outDir string, push bool, logf func(string, ...interface{})) ([]Built, error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	var out []Built
	for _, s := range specs {
		img, err := Image(s, m)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.Name, err)
		}
		ref, err := Ref(m, s.Name)
		if err != nil {
			return nil, err
		}
		file := filepath.Join(outDir, s.Name+".tar")
		if err := writeAtomically(file, func(tmp string) error { return tarball.WriteToFile(tmp, ref, img) }); err != nil {
			return nil, fmt.Errorf("writing %s: %w", file, err)
		}
		d, err := img.Digest()
		if err != nil {
			return nil, err
		}
		logf("built %s (%s) -> %s", ref, d, file)
		if push {
			if err := remote.Write(ref, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
				return nil, fmt.Errorf("pushing %s: %w", ref, err)
			}
			logf("pushed %s", ref)
		}
		out = append(out, Built{Name: s.Name, Ref: ref.String(), File: file, Digest: d.String()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return out, writeAtomically(filepath.Join(outDir, ManifestFile), func(tmp string) error { return os.WriteFile(tmp, b, 0o644) })
}

// writeAtomically writes path through a temporary file and a rename, so
// that a reader (a real node importing the images while another build
// runs) never sees a half-written file.
func writeAtomically(path string, write func(tmp string) error) error {
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := write(tmp); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// ReadManifest reads what Build listed in dir.
func ReadManifest(dir string) ([]Built, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("%w (run `make images`)", err)
	}
	var out []Built
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return out, nil
}
