// Package nvmlbind links weak stand-ins for NVML's functions into the
// binaries that import it: the scheduler (through the paddle scheduler
// plugin's blank import) and test binaries that link Volcano's scheduler
// (the plugin's tests, harness/testbuilders). Never import it from the GPU
// agent, which really calls NVML: weak stubs linked into it could answer its
// calls with errors.
package nvmlbind

// The scheduler links NVIDIA's allocator (pkg/gputopology), which links
// go-nvml's cgo wrappers. go-nvml leaves NVML's functions unresolved at link
// time (pkg/nvml/nvml.go: --unresolved-symbols=ignore-in-object-files) and
// relies on lazy binding to resolve them once libnvidia-ml is loaded.
// Volcano's scheduler also links Go's plugin package, and a cgo binary that
// can load plugins is linked with -z now (cmd/link, hostlink: DynlinkingGo),
// so the dynamic loader would stop the scheduler, and the test binaries that
// link it, at start-up on the first NVML symbol (NVIDIA's advice is
// -ldflags=-extldflags=-Wl,-z,lazy on every build, go-nvml#131,
// k8s-device-plugin#326; that cannot reach `go test`). nvmlbind.c defines
// each of those symbols weakly; the scheduler never initialises NVML, so
// they are never called. The GPU agent, which does call NVML, does not link
// this package. A go-nvml upgrade that adds functions shows up as a
// start-up failure of the scheduler plugin's tests: regenerate nvmlbind.c with
// hack/nvml-unbound.sh.

import "C"
