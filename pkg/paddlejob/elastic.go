package paddlejob

// Elastic collective jobs: Paddle's own launcher (python -m
// paddle.distributed.launch, and fleetrun since Paddle 2.3) re-forms its
// world when a pod is lost or joins, through an etcd master. This file
// holds what an elastic job's spec must be: resolveElastic and the checks
// of its template's env. Its arguments are in args.go, the env of its pods
// in elasticenv.go, the resize rule the webhook and the controller apply in
// update.go, its warnings in warnings.go, its etcd in store.go (created by
// pkg/paddlekube), the loss notice in pkg/controllers/paddleelastic.
//
// Paddle code cited: python/paddle/distributed/launch/ of Paddle v2.6.2
// and v3.0.0-beta2 (the same code in both).

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// resolveElastic sets l.Elastic for an elastic job and checks what Paddle's
// elastic launcher needs of the spec. Called by ValidateJob on a resolved
// layout.
func resolveElastic(job *batch.Job, l *Layout) field.ErrorList {
	e := &l.Args.Elastic
	l.Elastic = nil
	if !e.Enabled() {
		return nil
	}
	maxPath := argsPath.Key("--elastic-max")
	if l.Mode != paddleapi.ModeCollective {
		// Only CollectiveElasticController has an elastic mode
		// (controllers/collective.py: enable needs an etcd:// master);
		// PSController starts from fixed server and trainer lists.
		return field.ErrorList{field.Invalid(maxPath, e.Max,
			fmt.Sprintf("%s jobs cannot be elastic: Paddle re-forms only collective worlds (launch/controllers/collective.py: CollectiveElasticController); its parameter-server controller starts from fixed server and trainer lists. Remove --elastic-max", l.Mode))}
	}
	ti := l.Trainer.TaskIndex
	ts := &job.Spec.Tasks[ti]
	minPath := field.NewPath("spec", "tasks").Index(ti).Child("minAvailable")
	if ts.MinAvailable == nil {
		return field.ErrorList{field.Required(minPath,
			fmt.Sprintf("an elastic job's smallest world is the trainer task's minAvailable (MIN of PADDLE_NNODES=MIN:%d); set it", e.Max))}
	}
	lo := int(*ts.MinAvailable)
	var errs field.ErrorList
	switch {
	case lo < 1:
		errs = append(errs, field.Invalid(minPath, lo, "the smallest world of an elastic job needs at least 1 trainer"))
	case lo >= e.Max:
		errs = append(errs, field.Invalid(maxPath, e.Max,
			fmt.Sprintf("must be above the trainer task's minAvailable (%d): Paddle re-forms a world only between MIN and MAX (launch/job/job.py), and with MIN = MAX it waits ten times the timeout", lo)))
	}
	if len(errs) > 0 {
		return errs
	}
	if r := l.Trainer.Replicas; r < lo || r > e.Max {
		errs = append(errs, field.Invalid(field.NewPath("spec", "tasks").Index(ti).Child("replicas"), r,
			fmt.Sprintf("an elastic job runs between minAvailable (%d) and --elastic-max (%d) trainers; a launcher that sees more peers than MAX ends (controllers/master.py: wait_peer_ready)", lo, e.Max)))
	}
	// The gang must be able to run at MIN trainers: the job's minAvailable
	// may not count trainers above MIN.
	floor := int32(0)
	for i := range job.Spec.Tasks {
		t := &job.Spec.Tasks[i]
		switch {
		case i == ti:
			floor += int32(lo)
		case t.MinAvailable != nil:
			floor += *t.MinAvailable
		default:
			floor += t.Replicas
		}
	}
	if job.Spec.MinAvailable > floor {
		errs = append(errs, field.Invalid(field.NewPath("spec", "minAvailable"), job.Spec.MinAvailable,
			fmt.Sprintf("an elastic job must be able to run with %d trainers (the trainer task's minAvailable); set minAvailable to at most %d", lo, floor)))
	}
	if n := EtcdName(job.Name); len(validation.IsDNS1035Label(n)) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), job.Name,
			fmt.Sprintf("the job's etcd Service %q must be a DNS label of at most 63 characters; shorten the job name", n)))
	}
	if rp := ts.Template.Spec.RestartPolicy; rp != v1.RestartPolicyOnFailure && rp != v1.RestartPolicyNever {
		shown := string(rp)
		if shown == "" {
			shown = "unset (Always)"
		}
		// Restarted even after exit 0, a launcher that completed the job
		// or gave up waiting for peers (job/pod.py) starts again, so the
		// job never completes and such a pod is never replaced.
		errs = append(errs, field.Invalid(field.NewPath("spec", "tasks").Index(ti).Child("template", "spec", "restartPolicy"), shown,
			"an elastic job's trainers need restartPolicy OnFailure or Never: with Always a launcher that completed the job or gave up waiting for peers (exit 0) starts again, so the job never completes; set restartPolicy: OnFailure (a launcher that exits on a store fault or a crash restarts in place, and its crashes count toward --elastic-max-failures)"))
	}
	errs = append(errs, validateElasticTemplateEnv(job, l.Trainer)...)
	if len(errs) > 0 {
		return errs
	}
	l.Elastic = &Elastic{Min: lo, Max: e.Max, Args: e}
	return nil
}

// validateElasticTemplateEnv refuses template variables that break
// Paddle's elastic launcher. PADDLE_MASTER and PADDLE_NNODES are checked by
// validateTemplateEnv like every variable the plugin sets.
func validateElasticTemplateEnv(job *batch.Job, r *RoleTask) field.ErrorList {
	var errs field.ErrorList
	ts := &job.Spec.Tasks[r.TaskIndex]
	spec := field.NewPath("spec", "tasks").Index(r.TaskIndex).Child("template", "spec")
	for ci := range ts.Template.Spec.Containers {
		for ei, e := range ts.Template.Spec.Containers[ci].Env {
			path := spec.Child("containers").Index(ci).Child("env").Index(ei)
			if use := elasticEnvUse[e.Name]; use.refused { // elasticenv.go
				errs = append(errs, field.Forbidden(path, fmt.Sprintf("%s must not be set in an elastic job: %s; remove it", e.Name, use.why)))
				continue
			}
			if e.Name == EnvJobID && (e.ValueFrom != nil || e.Value != JobID(job)) {
				errs = append(errs, field.Invalid(path, e.Name, fmt.Sprintf(
					"PADDLE_JOB_ID of an elastic job is %q: the controller finds the launchers' keys in the job's etcd under /paddle/%s (loss notice, completion); remove it (the plugin sets it)", JobID(job), JobID(job))))
				continue
			}
			if msg := elasticEnvProblem(e); msg != "" {
				errs = append(errs, field.Invalid(path, e.Name, msg))
			}
		}
	}
	return errs
}

// elasticEnvProblem explains why a template's own value of an elastic
// variable cannot be used, or returns "". PADDLE_MAX_RESTART and the
// protobuf switch are the user's to set.
func elasticEnvProblem(e v1.EnvVar) string {
	switch e.Name {
	case EnvElasticLevel:
		if e.ValueFrom == nil && e.Value == "1" {
			return ""
		}
		return "PADDLE_ELASTIC_LEVEL must be 1 in an elastic job: with -1 (Paddle's default) every survivor stops and exits when a peer is lost, with 0 a launcher exits when its own process fails (controllers/controller.py: watch); remove it (the plugin sets 1)"
	case EnvElasticTimeout:
		if n, err := strconv.Atoi(e.Value); e.ValueFrom == nil && err == nil && n >= int(MinElasticTimeout.Seconds()) {
			return ""
		}
		return "PADDLE_ELASTIC_TIMEOUT must be whole seconds, at least 10 (a shorter one splits the first rendezvous); remove it and pass --elastic-timeout to the plugin"
	case EnvPodIP:
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP" {
			return ""
		}
		return "POD_IP becomes the host of the pod's endpoints in an elastic job (launch/context/args_envs.py: --host) and must be the pod's IP; remove it (the plugin sets it from status.podIP)"
	}
	return ""
}
