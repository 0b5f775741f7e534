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
OUR_BINARIES := $(BIN)/vc-scheduler-paddle $(BIN)/vc-controller-manager-paddle $(BIN)/vc-webhook-manager-paddle $(BIN)/local-cluster
TOOL_BINARIES := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kubectl $(BIN)/kwok

E2E_TIMEOUT ?= 40m
E2E_RUN ?= .
TOPOLOGY ?=

.PHONY: all binaries tools build up down status demo test test-unit test-e2e vet fmt-check images bench bench-full clean help

all: binaries

help:
	@sed -n 's/^#   //p' Makefile

binaries: tools build

build: $(OUR_BINARIES)

tools: $(TOOL_BINARIES)

$(BIN)/vc-scheduler-paddle $(BIN)/vc-controller-manager-paddle $(BIN)/vc-webhook-manager-paddle $(BIN)/local-cluster: $(GO_SOURCES)
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

## Local cluster

up: binaries
	@$(BIN)/local-cluster up $(if $(TOPOLOGY),--topology $(TOPOLOGY))

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
test-e2e: binaries
	@echo ">> e2e tests (real etcd, kube-apiserver, KWOK and our Volcano builds)"
	@$(GO) test -count=1 -timeout $(E2E_TIMEOUT) -run '$(E2E_RUN)' -v ./test/e2e/...

## Benchmarks (docs/benchmarks.md)

bench: binaries
	@$(GO) run ./bench/cmd/bench -mode quick

bench-full: binaries
	@$(GO) run ./bench/cmd/bench -mode full

## Images

REGISTRY ?= ghcr.io/volcano-paddle
IMAGE_TAG ?= $(VERSION)
IMAGE_BINARIES := vc-scheduler-paddle vc-controller-manager-paddle vc-webhook-manager-paddle

# Builds (and with PUSH=1 pushes) the three images with build/Dockerfile.
images:
	@if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then \
		echo "make images needs a running Docker engine, and there is none here (docker info fails)."; \
		echo "On a machine with Docker, run: make images REGISTRY=<your registry> [IMAGE_TAG=...] [PUSH=1]"; \
		echo "or build each image with any OCI builder from build/Dockerfile, e.g.:"; \
		echo "  docker build -f build/Dockerfile --build-arg BINARY=vc-scheduler-paddle -t \$$REGISTRY/vc-scheduler-paddle:\$$TAG ."; \
		echo "then point deploy/paddle/kustomization.yaml (images:) at them."; \
		exit 2; \
	fi
	@for b in $(IMAGE_BINARIES); do \
		echo ">> docker build $(REGISTRY)/$$b:$(IMAGE_TAG)"; \
		docker build -f build/Dockerfile --build-arg BINARY=$$b --build-arg VERSION=$(VERSION) \
			--build-arg GIT_SHA=$(GIT_SHA) --build-arg BUILT=$(BUILT) -t $(REGISTRY)/$$b:$(IMAGE_TAG) . || exit 1; \
		if [ "$(PUSH)" = 1 ]; then docker push $(REGISTRY)/$$b:$(IMAGE_TAG) || exit 1; fi; \
	done

clean: down
	rm -rf $(BIN) .local
