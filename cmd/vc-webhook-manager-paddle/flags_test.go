package main

import (
	"testing"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease/releasetest"
)

// TestReleaseArgs: vc-webhook-manager-paddle takes every flag the embedded Volcano
// release's manifest and Helm chart pass (releasetest's charts).
func TestReleaseArgs(t *testing.T) {
	releasetest.ParsesReleaseArgs(t, "vc-webhook-manager-paddle", volcanorelease.WebhookManager, addFlags)
}
