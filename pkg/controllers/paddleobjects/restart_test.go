package paddleobjects

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	"volcano.sh/apis/pkg/apis/helpers"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

func TestResumeRestartWithoutPodGroup(t *testing.T) {
	tests := []struct {
		name     string
		phase    batch.JobPhase
		pgName   string // "" no PodGroup
		plugins  map[string][]string
		wantSync bool
	}{
		{name: "restarting, PodGroup deleted", phase: batch.Restarting, wantSync: true},
		{name: "restarting, PodGroup re-created", phase: batch.Restarting, pgName: "wd-uid-wd"},
		{name: "restarting, PodGroup under the old name", phase: batch.Restarting, pgName: "wd"},
		{name: "running without PodGroup", phase: batch.Running},
		{name: "restarting job without paddle", phase: batch.Restarting, plugins: map[string][]string{"svc": {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := paddleJob("wd", tt.phase, 2)
			if tt.plugins != nil {
				job.Spec.Plugins = tt.plugins
			}
			c, _ := newController(t, job)
			ctx := context.Background()
			if tt.pgName != "" {
				pg := &scheduling.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: tt.pgName,
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, helpers.JobKind)}}}
				if _, err := c.VC.SchedulingV1beta1().PodGroups("ml").Create(ctx, pg, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
					return c.hasPodGroup(job), nil
				}); err != nil {
					t.Fatal("PodGroup not in the lister")
				}
			}
			if err := c.sync(ctx, "ml/wd"); err != nil {
				t.Fatal(err)
			}
			cmds, err := c.VC.BusV1alpha1().Commands("ml").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.wantSync {
				if len(cmds.Items) != 0 {
					t.Fatalf("commands issued: %+v", cmds.Items)
				}
				return
			}
			if len(cmds.Items) != 1 {
				t.Fatalf("%d commands, want one SyncJob", len(cmds.Items))
			}
			cmd := cmds.Items[0]
			if cmd.Action != string(bus.SyncJobAction) || cmd.TargetObject == nil || cmd.TargetObject.Name != "wd" ||
				cmd.TargetObject.Kind != "Job" || cmd.TargetObject.APIVersion != batch.SchemeGroupVersion.String() {
				t.Fatalf("command %+v", cmd)
			}
		})
	}
}

func TestReportForeignConfigMap(t *testing.T) {
	yes := true
	tests := []struct {
		name      string
		owner     []metav1.OwnerReference
		wantEvent bool
	}{
		{name: "created by someone else", wantEvent: true},
		{name: "owned by an earlier job of that name", owner: []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "wd", UID: "uid-old", Controller: &yes}}, wantEvent: true},
		{name: "the job's own", owner: []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "wd", UID: "uid-wd", Controller: &yes}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := paddleJob("wd", batch.Restarting, 2)
			job.Status.Version = 1
			c, kube := newController(t, job)
			rec := record.NewFakeRecorder(10)
			c.Recorder = rec
			ctx := context.Background()
			cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "wd-paddle-v1", OwnerReferences: tt.owner}}
			if _, err := kube.CoreV1().ConfigMaps("ml").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := c.reportForeignConfigMap(ctx, job); err != nil {
				t.Fatal(err)
			}
			select {
			case e := <-rec.Events:
				if !tt.wantEvent {
					t.Fatalf("event %q", e)
				}
				if !strings.Contains(e, ConfigMapTakenReason) || !strings.Contains(e, "ml/wd-paddle-v1") || !strings.Contains(e, "delete that ConfigMap or rename the job") {
					t.Fatalf("event %q does not name the ConfigMap and the fix", e)
				}
			default:
				if tt.wantEvent {
					t.Fatal("no event")
				}
			}
			if got, err := kube.CoreV1().ConfigMaps("ml").Get(ctx, cm.Name, metav1.GetOptions{}); err != nil || len(got.OwnerReferences) != len(tt.owner) {
				t.Fatalf("the ConfigMap was changed: %+v %v", got, err)
			}
		})
	}
}
