// Command paddle-images builds the container images of our binaries without
// a container engine (`make images`): each binary is compiled static
// (see compile) and put, with a non-root user, into a one-layer image
// written as a docker-archive tarball by go-containerregistry
// (internal/images); --push also pushes them. build/Dockerfile builds the
// same images for those who use Docker.
//
// --etcd-module also builds an image "etcd" of the etcd server pinned by a
// control-plane tools module (tools/controlplane-1.35): the local real node
// runs it as elastic jobs' etcd pods (the job plugin's --etcd-image), since
// it cannot pull registry.k8s.io/etcd. It is not one of our images: it is
// never pushed.
//
//	paddle-images --registry ghcr.io/volcano-paddle --tag v0.1.0 --out .local/images [--push]
//	paddle-images ... --etcd-module tools/controlplane-1.35 (the real node's images)
package main

import (
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/volcano-paddle/volcano-paddle/internal/images"
)

// Binaries are the images `make images` builds, one per command of ours.
var Binaries = []string{
	"vc-scheduler-paddle", "vc-controller-manager-paddle", "vc-webhook-manager-paddle",
	"paddle-barrier", "paddle-probe",
}

func main() {
	var (
		registry = flag.String("registry", "ghcr.io/volcano-paddle", "registry and path the images are named under")
		tag      = flag.String("tag", "", "image tag (default: --version)")
		ver      = flag.String("version", "devel", "version stamped into the binaries and the image labels")
		revision = flag.String("revision", "unknown", "git revision for the binaries and labels")
		built    = flag.String("built", time.Now().UTC().Format(time.RFC3339), "build time (RFC 3339) for the binaries and labels")
		out      = flag.String("out", ".local/images", "folder for the tarballs and images.json")
		only     = flag.String("images", strings.Join(Binaries, ","), "comma-separated images to build")
		push     = flag.Bool("push", false, "also push each image to the registry (credentials from the Docker config)")
		etcdMod  = flag.String("etcd-module", "", "also build the image etcd from the etcd server of this Go module folder (the local real node's; refused with --push)")
	)
	flag.Parse()
	if *push && *etcdMod != "" {
		fmt.Fprintln(os.Stderr, "paddle-images: --etcd-module builds an image for the local real node only; it is not pushed")
		os.Exit(2)
	}
	if err := run(*registry, *tag, *ver, *revision, *built, *out, strings.Split(*only, ","), *etcdMod, *push); err != nil {
		fmt.Fprintf(os.Stderr, "paddle-images: %v\n", err)
		os.Exit(1)
	}
}

func run(registry, tag, ver, revision, built, out string, names []string, etcdMod string, push bool) error {
	created, err := time.Parse(time.RFC3339, built)
	if err != nil {
		return fmt.Errorf("--built: %w", err)
	}
	if tag == "" {
		tag = ver
	}
	for _, n := range names {
		if !slices.Contains(Binaries, n) {
			return fmt.Errorf("unknown image %q (known: %s)", n, strings.Join(Binaries, ", "))
		}
	}
	binDir := filepath.Join(out, "bin")
	if err := compile(binDir, names, ver, revision, built); err != nil {
		return err
	}
	var specs []images.Spec
	for _, n := range names {
		specs = append(specs, images.Spec{Name: n, Binary: filepath.Join(binDir, n)})
	}
	if etcdMod != "" {
		s, err := etcdImage(etcdMod, binDir)
		if err != nil {
			return err
		}
		specs = append(specs, s)
	}
	m := images.Meta{Registry: registry, Tag: tag, Version: ver, Revision: revision, Created: created,
		Source: "https://github.com/volcano-paddle/volcano-paddle"}
	_, err = images.Build(specs, m, out, push, func(f string, a ...interface{}) { fmt.Printf("   "+f+"\n", a...) })
	return err
}

// compile builds the commands static, with the version stamped in as the
// Makefile does. The scheduler links cgo (go-nvml, through NVIDIA's
// allocator in pkg/gputopology), so every command links glibc statically,
// with Go's own resolver and user lookup (netgo, osusergo) so that nothing
// needs NSS at run time: the images have no libc. One configuration for all
// of them keeps a cold build to one extra compile of the dependencies.
func compile(binDir string, names []string, ver, revision, built string) error {
	const pkg = "github.com/volcano-paddle/volcano-paddle/pkg/version"
	ldflags := fmt.Sprintf("-s -w -X %s.Version=%s -X %s.GitSHA=%s -X %s.Built=%s -linkmode external -extldflags -static", pkg, ver, pkg, revision, pkg, built)
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	if err := goBuild(binDir, names, []string{"-tags", imageTags(os.Getenv("GOFLAGS")), "-ldflags", ldflags}, "CGO_ENABLED=1"); err != nil {
		return err
	}
	for _, n := range names {
		if err := checkStatic(filepath.Join(binDir, n)); err != nil {
			return err
		}
	}
	return nil
}

// etcdPackage is the etcd server's main package and module.
const etcdPackage = "go.etcd.io/etcd/server/v3"

// etcdImage compiles the etcd server of the module in dir (the version the
// local cluster's own etcd runs) static and describes its image: the
// binary at /usr/local/bin/etcd, where the job plugin's etcd pod finds it
// (its command is "etcd", as in registry.k8s.io/etcd), labelled with
// etcd's version and source.
func etcdImage(dir, binDir string) (images.Spec, error) {
	ver, err := goIn(dir, "list", "-m", "-f", "{{.Version}}", etcdPackage)
	if err != nil {
		return images.Spec{}, err
	}
	fmt.Printf(">> compiling etcd %s of %s (static, CGO_ENABLED=0)\n", ver, dir)
	start := time.Now()
	bin := filepath.Join(binDir, "etcd")
	// The tools module has its own go.mod: the caller's -modfile (ours)
	// must not reach it.
	if _, err := goIn(dir, "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, etcdPackage); err != nil {
		return images.Spec{}, err
	}
	fmt.Printf("   compiled in %s\n", time.Since(start).Round(time.Second))
	if err := checkStatic(bin); err != nil {
		return images.Spec{}, err
	}
	return images.Spec{Name: "etcd", Binary: bin, Labels: map[string]string{
		"org.opencontainers.image.version": ver,
		"org.opencontainers.image.source":  "https://github.com/etcd-io/etcd",
	}}, nil
}

// goIn runs the go command in a module folder other than ours, static and
// without the caller's -modfile, and returns its output.
func goIn(dir string, args ...string) (string, error) {
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if !strings.HasPrefix(f, "-modfile=") {
			flags = append(flags, f)
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.Join(flags, " "), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s (in %s): %w", strings.Join(args, " "), dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// imageTags are the build tags of the images' commands: netgo and
// osusergo, and those the caller's GOFLAGS names (the Makefile's tag of
// the Volcano release, volcano_v1_15), since a -tags on the command line
// replaces the one in GOFLAGS.
func imageTags(goflags string) string {
	tags := []string{"netgo", "osusergo"}
	for _, f := range strings.Fields(goflags) {
		if v, ok := strings.CutPrefix(f, "-tags="); ok && v != "" {
			tags = append(tags, strings.Split(v, ",")...)
		}
	}
	return strings.Join(tags, ",")
}

// packageDir is where a binary's main package lives: the test harness's
// commands (the stand-in trainer) sit under harness/cmd, apart from what ships.
func packageDir(name string) string {
	if name == "paddle-probe" {
		return "./harness/cmd/" + name
	}
	return "./cmd/" + name
}

func goBuild(binDir string, names, flags []string, env ...string) error {
	if len(names) == 0 {
		return nil
	}
	args := append([]string{"build", "-trimpath"}, flags...)
	args = append(args, "-o", binDir+string(filepath.Separator))
	for _, n := range names {
		args = append(args, packageDir(n))
	}
	fmt.Printf(">> compiling %s (static, %s)\n", strings.Join(names, ", "), strings.Join(env, " "))
	start := time.Now()
	cmd := exec.Command("go", args...)
	cmd.Env = append(append(os.Environ(), "GOOS=linux", "GOARCH=amd64"), env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	fmt.Printf("   compiled in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// checkStatic refuses a binary that needs a dynamic loader: the images have
// none.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; the image has no libc", path)
		}
	}
	return nil
}
