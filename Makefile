# volcano-paddle: PaddlePaddle distributed training as a first-class Volcano citizen.
#
#   make demo    local control plane + our scheduler and controller, the example Paddle jobs placed and started
#   make test    every test: vet, gofmt, unit tests, e2e tests against a real local control plane
#
# Everything builds from the Go module proxy; no container runtime is needed.

SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
GIT_SHA ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
BUILT   ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG := github.com/volcano-paddle/volcano-paddle/pkg/version
LDFLAGS := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).GitSHA=$(GIT_SHA) -X $(VERSION_PKG).Built=$(BUILT)

# Our binaries depend on every Go file of the module (go's build cache makes
# the rebuild itself incremental); the tools only on their own go.mod/go.sum.
GO_SOURCES := $(shell find cmd pkg internal -name '*.go' -not -name '*_test.go' 2>/dev/null) go.mod go.sum
OUR_BINARIES := $(BIN)/vc-scheduler-paddle $(BIN)/vc-controller-manager-paddle $(BIN)/vc-webhook-manager-paddle $(BIN)/local-cluster $(BIN)/paddle-gpu-agent
TOOL_BINARIES := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kubectl $(BIN)/kwok
# The real node (REAL_NODE=1): kubelet and CoreDNS; containerd, runc and the
# CNI plugins come from Debian (hack/realnode-deps.sh).
REAL_NODE_BINARIES := $(BIN)/kubelet $(BIN)/coredns

E2E_TIMEOUT ?= 40m
E2E_RUN ?= .
TOPOLOGY ?=
# make up REAL_NODE=1 adds the real node real-0; make test runs the real-node
# e2e tests unless REAL_NODE=0 (they need root; see docs/testing.md).
REAL_NODE ?=
IMAGES_DIR := $(CURDIR)/.local/images

.PHONY: all binaries tools build up down status demo test test-unit test-e2e vet fmt-check images realnode realnode-deps bench bench-full clean help

all: binaries

help:
	@sed -n 's/^#   //p' Makefile

binaries: tools build

build: $(OUR_BINARIES)

tools: $(TOOL_BINARIES)

$(BIN)/vc-scheduler-paddle $(BIN)/vc-controller-manager-paddle $(BIN)/vc-webhook-manager-paddle $(BIN)/local-cluster $(BIN)/paddle-gpu-agent: $(GO_SOURCES)
	@hack/build.sh $(notdir $@) . $@ ./cmd/$(notdir $@) -ldflags "$(LDFLAGS)"

# Control-plane binaries come from their own modules (see the go.mod comments).
$(BIN)/etcd: tools/controlplane/go.mod tools/controlplane/go.sum
	@hack/build.sh "etcd (first build: about 1 min)" tools/controlplane $@ go.etcd.io/etcd/server/v3

$(BIN)/kube-apiserver: tools/controlplane/go.mod tools/controlplane/go.sum
	@hack/build.sh "kube-apiserver (first build: about 4 min on 2 cores)" tools/controlplane $@ k8s.io/kubernetes/cmd/kube-apiserver

$(BIN)/kube-controller-manager: tools/controlplane/go.mod tools/controlplane/go.sum
	@hack/build.sh "kube-controller-manager (first build: about 2 min)" tools/controlplane $@ k8s.io/kubernetes/cmd/kube-controller-manager

$(BIN)/kubectl: tools/controlplane/go.mod tools/controlplane/go.sum
	@hack/build.sh "kubectl" tools/controlplane $@ k8s.io/kubernetes/cmd/kubectl

$(BIN)/kwok: tools/kwok/go.mod tools/kwok/go.sum
	@hack/build.sh "kwok (first build: about 1.5 min)" tools/kwok $@ sigs.k8s.io/kwok/cmd/kwok

$(BIN)/kubelet: tools/controlplane/go.mod tools/controlplane/go.sum
	@hack/build.sh "kubelet (about 20 s after the control plane)" tools/controlplane $@ k8s.io/kubernetes/cmd/kubelet

$(BIN)/coredns: tools/coredns/go.mod tools/coredns/go.sum tools/coredns/main.go
	@hack/build.sh "coredns (first build: about 2 min)" tools/coredns $@ github.com/volcano-paddle/volcano-paddle/tools/coredns

# Everything the real node needs: Debian packages (installed when root),
# kubelet, CoreDNS and our images for its containerd.
realnode: realnode-deps $(REAL_NODE_BINARIES) $(IMAGES_DIR)/images.json

realnode-deps:
	@hack/realnode-deps.sh

## Local cluster

up: binaries $(if $(filter 1,$(REAL_NODE)),realnode)
	@$(BIN)/local-cluster up $(if $(TOPOLOGY),--topology $(TOPOLOGY)) $(if $(filter 1,$(REAL_NODE)),--real-node \
		$(if $(DNS_CACHE),--dns-cache $(DNS_CACHE)) $(if $(DNS_TTL),--dns-ttl $(DNS_TTL)))

down:
	@if [ -x $(BIN)/local-cluster ]; then $(BIN)/local-cluster down; else echo "No local cluster is running."; fi

status: $(BIN)/local-cluster
	@$(BIN)/local-cluster status

demo: binaries
	@$(BIN)/local-cluster demo $(DEMO_FLAGS)

## Tests

test: vet fmt-check test-unit test-e2e

vet:
	@echo ">> go vet"
	@$(GO) vet ./...

fmt-check:
	@echo ">> gofmt"
	@out=$$(gofmt -l cmd pkg internal test tools bench 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

test-unit:
	@echo ">> unit tests"
	@$(GO) test -count=1 ./cmd/... ./pkg/... ./internal/... ./bench/...

# One e2e test: make test-e2e E2E_RUN=TestGangAllOrNothing
test-e2e: binaries $(if $(filter 0,$(REAL_NODE)),,realnode)
	@echo ">> e2e tests (real etcd, kube-apiserver, KWOK, our Volcano builds$(if $(filter 0,$(REAL_NODE)),,; the real node real-0))"
	@$(GO) test -count=1 -timeout $(E2E_TIMEOUT) -run '$(E2E_RUN)' $(if $(filter 0,$(REAL_NODE)),-skip '^TestRealNode') -v ./test/e2e/...

## Benchmarks (docs/benchmarks.md)

bench: binaries
	@$(GO) run ./bench/cmd/bench -mode quick

bench-full: binaries
	@$(GO) run ./bench/cmd/bench -mode full

## Images

REGISTRY ?= ghcr.io/volcano-paddle
IMAGE_TAG ?= $(VERSION)

# Builds the images of our binaries without Docker (cmd/paddle-images:
# go-containerregistry, docker-archive tarballs in .local/images) and with
# PUSH=1 pushes them: make images REGISTRY=<your registry> PUSH=1.
# build/Dockerfile builds the same images with Docker.
images:
	@$(GO) run ./cmd/paddle-images --registry $(REGISTRY) --tag $(IMAGE_TAG) --version $(VERSION) \
		--revision $(GIT_SHA) --built $(BUILT) --out $(IMAGES_DIR) $(if $(filter 1,$(PUSH)),--push)

# The same, for the real node, rebuilt when a source changes.
$(IMAGES_DIR)/images.json: $(GO_SOURCES)
	@echo ">> building images for the real node"
	@$(GO) run ./cmd/paddle-images --registry $(REGISTRY) --tag $(IMAGE_TAG) --version $(VERSION) \
		--revision $(GIT_SHA) --built $(BUILT) --out $(IMAGES_DIR)

clean: down
	rm -rf $(BIN) .local
