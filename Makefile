# volcano-paddle: PaddlePaddle distributed training as a first-class Volcano citizen.
#
#   make demo    local control plane + our scheduler and controller, the example Paddle jobs placed and started
#   make test    every test on Volcano v1.15.1, then build, vet, unit tests and the e2e smoke subset on v1.14.1
#   make test-volcano-e2e   Volcano v1.15.1's own schedulingaction e2e suite with and without paddle (not in make test)
#   VOLCANO=v1.14.1 picks the other supported Volcano release (default v1.15.1) for build, up, demo, test, images
#
# Everything builds from the Go module proxy; no container runtime is needed.

SHELL := /bin/bash
GO ?= go

# The Volcano release compiled into our binaries, and what goes with it: the
# module file, the Kubernetes control plane of the local cluster.
VOLCANO ?= v1.15.1
ifeq ($(VOLCANO),v1.15.1)
# go.mod is v1.14.1 so that a fresh clone's go build/vet/test ./... needs no
# make; v1.15.1 is a second module file whose volcano.sh/apis is assembled
# (hack/assemble-volcano-apis.sh, docs/install.md).
MODFILE := go.volcano-v1.15.1.mod
VOLCANO_APIS := .local/volcano-apis/go.mod
# Code for one release only (the scheduler plugin's hook for v1.15's
# gang-aware eviction: pkg/scheduler/plugins/paddle/unified_volcano115.go).
VOLCANO_TAGS := volcano_v1_15
CONTROLPLANE := tools/controlplane-1.35
KUBERNETES := v1.35.3
else ifeq ($(VOLCANO),v1.14.1)
MODFILE := go.mod
VOLCANO_APIS :=
VOLCANO_TAGS :=
CONTROLPLANE := tools/controlplane
KUBERNETES := v1.34.1
else
$(error VOLCANO=$(VOLCANO) is not supported: use v1.15.1 (the default) or v1.14.1)
endif
# Kubernetes' own builds stamp their version (hack/lib/version.sh); a plain
# go build says v0.0.0-master. Volcano reads the API server's version to set
# its feature-gate defaults, and kubectl version should name the release.
KUBE_MINOR := $(word 2,$(subst ., ,$(KUBERNETES)))
KUBE_LDFLAGS := $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,-X $(p).gitVersion=$(KUBERNETES) -X $(p).gitMajor=1 -X $(p).gitMinor=$(KUBE_MINOR) -X $(p).gitTreeState=clean)

# Every go command on our module, and those our tests and tools start
# (paddle-images, the bench, go list in tests), reads the release's module
# file through GOFLAGS; the tools modules get the caller's GOFLAGS only.
TOOLS_GOFLAGS := $(shell $(GO) env GOFLAGS)
export GOFLAGS := $(strip $(TOOLS_GOFLAGS) $(if $(filter-out go.mod,$(MODFILE)),-modfile=$(CURDIR)/$(MODFILE)) $(if $(VOLCANO_TAGS),-tags=$(VOLCANO_TAGS)))

# Each release builds into its own folder; bin/ holds links to the chosen
# one (the local cluster and the e2e tests run bin/<name>), so switching
# VOLCANO back and forth rebuilds nothing.
BIN_ROOT := $(CURDIR)/bin
BIN := $(BIN_ROOT)/$(VOLCANO)

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
GIT_SHA ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
BUILT   ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG := github.com/volcano-paddle/volcano-paddle/pkg/version
LDFLAGS := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).GitSHA=$(GIT_SHA) -X $(VERSION_PKG).Built=$(BUILT)

# Our binaries depend on every Go file of the module (go's build cache makes
# the rebuild itself incremental); the tools only on their own go.mod/go.sum.
GO_SOURCES := $(shell find cmd pkg internal harness -name '*.go' -not -name '*_test.go' 2>/dev/null) $(MODFILE) $(MODFILE:.mod=.sum) $(VOLCANO_APIS)
OUR_NAMES := vc-scheduler-paddle vc-controller-manager-paddle vc-webhook-manager-paddle local-cluster paddle-gpu-agent paddle-replay
OUR_BINARIES := $(addprefix $(BIN)/,$(OUR_NAMES))
# The harness's commands (local cluster, stand-in trainer) live under
# harness/cmd, apart from what ships.
HARNESS_NAMES := local-cluster paddle-probe
main_dir = $(if $(filter $(1),$(HARNESS_NAMES)),./harness/cmd/$(1),./cmd/$(1))
TOOL_NAMES := etcd kube-apiserver kube-controller-manager kubectl kwok
TOOL_BINARIES := $(addprefix $(BIN)/,$(TOOL_NAMES))
# The real node (REAL_NODE=1): kubelet and CoreDNS; containerd, runc and the
# CNI plugins come from Debian (hack/realnode-deps.sh).
REAL_NODE_NAMES := kubelet coredns
REAL_NODE_BINARIES := $(addprefix $(BIN)/,$(REAL_NODE_NAMES))

E2E_TIMEOUT ?= 40m
E2E_RUN ?= .
TOPOLOGY ?=
# make up REAL_NODE=1 adds the real node real-0; make test runs the real-node
# e2e tests unless REAL_NODE=0 (they need root; see docs/testing.md).
REAL_NODE ?=
IMAGES_DIR := $(CURDIR)/.local/images

.PHONY: all binaries tools build select up down status demo test test-all test-unit test-e2e test-smoke vet fmt-check tidy-check apis-check images realnode realnode-deps bench bench-full clean help

all: binaries

help:
	@sed -n 's/^#   //p' Makefile

binaries: tools build
	@$(SELECT)

build: $(OUR_BINARIES)
	@$(SELECT)

tools: $(TOOL_BINARIES)

# bin/<name> -> bin/$(VOLCANO)/<name> for every binary built for this
# release; run by every target that starts binaries, after its prerequisites.
SELECT = mkdir -p $(BIN) && for f in $(BIN)/*; do if [ -e "$$f" ]; then ln -sfn "$(VOLCANO)/$${f\#\#*/}" "$(BIN_ROOT)/$${f\#\#*/}"; fi; done
select:
	@$(SELECT)

$(OUR_BINARIES): $(GO_SOURCES)
	@hack/build.sh "$(notdir $@) (Volcano $(VOLCANO))" . $@ $(call main_dir,$(notdir $@)) -ldflags "$(LDFLAGS)"

# volcano.sh/apis of the v1.15.1 build: the proxy's v1.14.0 plus our file.
.local/volcano-apis/go.mod: hack/assemble-volcano-apis.sh hack/volcano-apis/queue_allocation_gate.go.in
	@hack/assemble-volcano-apis.sh
	@touch $@

# Control-plane binaries come from their own modules (see the go.mod
# comments): Kubernetes $(KUBERNETES) for this release.
$(BIN)/etcd: $(CONTROLPLANE)/go.mod $(CONTROLPLANE)/go.sum
	@GOFLAGS='$(TOOLS_GOFLAGS)' hack/build.sh "etcd (first build: about 1 min)" $(CONTROLPLANE) $@ go.etcd.io/etcd/server/v3

$(BIN)/kube-apiserver: $(CONTROLPLANE)/go.mod $(CONTROLPLANE)/go.sum
	@GOFLAGS='$(TOOLS_GOFLAGS)' hack/build.sh "kube-apiserver $(KUBERNETES) (first build: about 4 min on 2 cores)" $(CONTROLPLANE) $@ k8s.io/kubernetes/cmd/kube-apiserver -ldflags "$(KUBE_LDFLAGS)"

$(BIN)/kube-controller-manager: $(CONTROLPLANE)/go.mod $(CONTROLPLANE)/go.sum
	@GOFLAGS='$(TOOLS_GOFLAGS)' hack/build.sh "kube-controller-manager $(KUBERNETES) (first build: about 2 min)" $(CONTROLPLANE) $@ k8s.io/kubernetes/cmd/kube-controller-manager -ldflags "$(KUBE_LDFLAGS)"

$(BIN)/kubectl: $(CONTROLPLANE)/go.mod $(CONTROLPLANE)/go.sum
	@GOFLAGS='$(TOOLS_GOFLAGS)' hack/build.sh "kubectl $(KUBERNETES)" $(CONTROLPLANE) $@ k8s.io/kubernetes/cmd/kubectl -ldflags "$(KUBE_LDFLAGS)"

$(BIN)/kwok: tools/kwok/go.mod tools/kwok/go.sum
	@GOFLAGS='$(TOOLS_GOFLAGS)' hack/build.sh "kwok (first build: about 1.5 min)" tools/kwok $@ sigs.k8s.io/kwok/cmd/kwok

KUBELET_LDFLAGS := $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,-X $(p).gitVersion=v1.34.1 -X $(p).gitMajor=1 -X $(p).gitMinor=34 -X $(p).gitTreeState=clean)
# The real node's kubelet is 1.34 under both releases (docs/install.md: the
# 1.34 kubelet beside a 1.35 API server is a skew Kubernetes supports).
$(BIN)/kubelet: tools/controlplane/go.mod tools/controlplane/go.sum
	@GOFLAGS='$(TOOLS_GOFLAGS)' hack/build.sh "kubelet v1.34.1 (about 20 s after the control plane)" tools/controlplane $@ k8s.io/kubernetes/cmd/kubelet -ldflags "$(KUBELET_LDFLAGS)"

$(BIN)/coredns: tools/coredns/go.mod tools/coredns/go.sum tools/coredns/main.go
	@GOFLAGS='$(TOOLS_GOFLAGS)' hack/build.sh "coredns (first build: about 2 min)" tools/coredns $@ github.com/volcano-paddle/volcano-paddle/tools/coredns

# Everything the real node needs: Debian packages (installed when root),
# kubelet, CoreDNS and our images for its containerd.
realnode: realnode-deps $(REAL_NODE_BINARIES) $(IMAGES_DIR)/images.json
	@$(SELECT)

realnode-deps:
	@hack/realnode-deps.sh

## Local cluster

up: binaries $(if $(filter 1,$(REAL_NODE)),realnode)
	@$(SELECT)
	@$(BIN)/local-cluster up $(if $(TOPOLOGY),--topology $(TOPOLOGY)) $(if $(filter 1,$(REAL_NODE)),--real-node \
		$(if $(DNS_CACHE),--dns-cache $(DNS_CACHE)) $(if $(DNS_TTL),--dns-ttl $(DNS_TTL)))

down:
	@if [ -x $(BIN)/local-cluster ]; then $(BIN)/local-cluster down; else echo "No local cluster is running."; fi

status: $(BIN)/local-cluster
	@$(BIN)/local-cluster status

demo: binaries
	@$(SELECT)
	@$(BIN)/local-cluster demo $(DEMO_FLAGS)

## Tests

# make test: everything on $(VOLCANO), then (for the default v1.15.1) the
# v1.14.1 build's vet, unit tests and the e2e smoke subset below. With
# VOLCANO=v1.14.1 it runs everything on v1.14.1 only.
ifeq ($(VOLCANO),v1.15.1)
OTHER_VOLCANO := v1.14.1
else
OTHER_VOLCANO :=
endif
# The e2e tests of the second release: its control plane and CRDs, our three
# binaries started with its manifest's flags, a gang placed and run by the
# paddle plugin, the job plugin's env and Service, bad specs refused at
# admission, the Service re-created, the install overlays of that release.
# Without the real node: its images need a second, static compile of every
# dependency of that release, which a cold CI run cannot afford twice.
E2E_SMOKE ?= ^(TestGangAllOrNothing|TestGangRunsToCompletion|TestPaddleCTRSeedJob|TestPaddleInvalidJobsRefusedAtAdmission|TestPaddleObjectsRecreated|TestInstallOverlay)$$

test: test-all
ifneq ($(OTHER_VOLCANO),)
	@GOFLAGS='$(TOOLS_GOFLAGS)' $(MAKE) --no-print-directory VOLCANO=$(OTHER_VOLCANO) test-smoke
endif

test-all: vet fmt-check tidy-check apis-check test-unit test-e2e

test-smoke: vet test-unit
	@$(MAKE) --no-print-directory test-e2e REAL_NODE=0 E2E_RUN='$(E2E_SMOKE)'

vet: $(VOLCANO_APIS)
	@echo ">> go vet (Volcano $(VOLCANO))"
	@$(GO) vet ./...

fmt-check:
	@echo ">> gofmt"
	@out=$$(gofmt -l cmd pkg internal harness test tools bench hack 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Both module files list exactly what the code imports, direct ones as direct.
tidy-check: .local/volcano-apis/go.mod
	@echo ">> go mod tidy -diff (go.mod, go.volcano-v1.15.1.mod)"
	@GOFLAGS='$(TOOLS_GOFLAGS)' $(GO) mod tidy -diff
	@GOFLAGS='$(TOOLS_GOFLAGS)' $(GO) mod tidy -diff -modfile=go.volcano-v1.15.1.mod

# The assembled volcano.sh/apis is exactly the proxy's v1.14.0 plus our file.
apis-check: .local/volcano-apis/go.mod
	@echo ">> volcano.sh/apis of the v1.15.1 build"
	@hack/assemble-volcano-apis.sh check

# Tests that need a real etcd (paddleelastic's loss notice) run it from
# bin/etcd once built (make binaries, make test-e2e), and skip before.
test-unit: $(VOLCANO_APIS) $(BIN)/etcd
	@echo ">> unit tests (Volcano $(VOLCANO))"
	@ETCD_BIN=$(BIN)/etcd $(GO) test -count=1 ./cmd/... ./pkg/... ./internal/... ./harness/... ./bench/... ./hack/...

# One e2e test: make test-e2e E2E_RUN=TestGangAllOrNothing
test-e2e: binaries $(if $(filter 0,$(REAL_NODE)),,realnode)
	@$(SELECT)
	@echo ">> e2e tests, Volcano $(VOLCANO), Kubernetes $(KUBERNETES) (real etcd, kube-apiserver, KWOK, our Volcano builds$(if $(filter 0,$(REAL_NODE)),,; the real node real-0))"
	@$(GO) test -count=1 -timeout $(E2E_TIMEOUT) -run '$(E2E_RUN)' $(if $(filter 0,$(REAL_NODE)),-skip '^TestRealNode') -v ./test/e2e/...

## Volcano's own e2e suite (docs/testing.md)

# Volcano v1.15.1's test/e2e/schedulingaction, compiled from the module cache
# in its own module (tools/volcano-e2e: ginkgo and gomega stay out of ours),
# run by hack/volcano-e2e on a fresh local cluster with deploy/paddle's
# scheduler configuration, then on another with the same configuration minus
# paddle; it prints both runs' results side by side and fails unless every
# selected spec passed in both. Not part of make test (see docs/testing.md
# for its duration); run before each release. VOLCANO_E2E_FLAGS passes flags
# on, e.g. VOLCANO_E2E_FLAGS='-runs without -focus Reclaim'.
VOLCANO_E2E_SUITE := $(BIN_ROOT)/v1.15.1/volcano-e2e-schedulingaction.test
VOLCANO_E2E_FLAGS ?=

.PHONY: test-volcano-e2e
ifeq ($(VOLCANO),v1.15.1)
# It starts bin/v1.15.1/* directly and leaves the bin/ links alone: a make
# command for the other release may repoint them during its half hour.
test-volcano-e2e: binaries $(VOLCANO_E2E_SUITE)
	@$(GO) run ./hack/volcano-e2e -suite $(VOLCANO_E2E_SUITE) -bin $(BIN) $(VOLCANO_E2E_FLAGS)
else
test-volcano-e2e:
	@echo "test-volcano-e2e runs Volcano v1.15.1's own suite against the v1.15.1 build: use VOLCANO=v1.15.1 (the default)"; exit 1
endif

$(VOLCANO_E2E_SUITE): tools/volcano-e2e/go.mod tools/volcano-e2e/go.sum .local/volcano-apis/go.mod
	@echo ">> building Volcano v1.15.1's e2e suite test/e2e/schedulingaction (tools/volcano-e2e)"
	@mkdir -p $(dir $@)
	@cd tools/volcano-e2e && GOFLAGS='$(TOOLS_GOFLAGS)' $(GO) test -c -o $@ volcano.sh/volcano/test/e2e/schedulingaction

## Benchmarks (docs/benchmarks.md)

# The bench is built with the release's module file (GOFLAGS above), so the
# replay runs that release's scheduler code; its report names the release.
bench: binaries
	@$(SELECT)
	@echo ">> benchmarks, quick mode (Volcano $(VOLCANO))"
	@$(GO) run ./bench/cmd/bench -mode quick

bench-full: binaries
	@$(SELECT)
	@echo ">> benchmarks, full mode (Volcano $(VOLCANO))"
	@$(GO) run ./bench/cmd/bench -mode full

## Images

REGISTRY ?= ghcr.io/volcano-paddle
# Our images embed one Volcano release each: tag and stamped version
# <version>-volcano-<release> (v0.2.0-volcano-v1.15.1), so that the job
# plugin's default paddle-barrier image is the one of the same build.
IMAGE_TAG ?= $(VERSION)-volcano-$(VOLCANO)
# images.json is rebuilt when VOLCANO changes (the stamp of the other
# release is removed).
IMAGES_STAMP := $(IMAGES_DIR)/built-for-volcano-$(VOLCANO)

# Builds the images of our binaries without Docker (cmd/paddle-images:
# go-containerregistry, docker-archive tarballs in .local/images) and with
# PUSH=1 pushes them: make images REGISTRY=<your registry> PUSH=1.
# build/Dockerfile builds the same images with Docker.
images: $(VOLCANO_APIS)
	@$(GO) run ./cmd/paddle-images --registry $(REGISTRY) --tag $(IMAGE_TAG) --version $(IMAGE_TAG) \
		--revision $(GIT_SHA) --built $(BUILT) --out $(IMAGES_DIR) $(if $(filter 1,$(PUSH)),--push)

# The same, for the real node, rebuilt when a source changes, plus an etcd
# image of this release's control-plane etcd for elastic jobs' etcd pods
# (the node cannot pull registry.k8s.io/etcd; never pushed).
$(IMAGES_DIR)/images.json: $(GO_SOURCES) $(IMAGES_STAMP) $(CONTROLPLANE)/go.mod $(CONTROLPLANE)/go.sum
	@echo ">> building images for the real node (Volcano $(VOLCANO))"
	@$(GO) run ./cmd/paddle-images --registry $(REGISTRY) --tag $(IMAGE_TAG) --version $(IMAGE_TAG) \
		--revision $(GIT_SHA) --built $(BUILT) --out $(IMAGES_DIR) --etcd-module $(CONTROLPLANE)

$(IMAGES_STAMP):
	@mkdir -p $(IMAGES_DIR) && rm -f $(IMAGES_DIR)/built-for-volcano-* && touch $@

clean: down
	rm -rf $(BIN_ROOT) .local
