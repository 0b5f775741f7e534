package paddlejob

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Warnings lists what is valid but risky in a Paddle job that passed
// ValidateJob (l is its layout), and the entry points its size rules out.
// It is the one place warnings are computed: the admission webhook returns
// them in the `warnings` of its response, which kubectl prints, and the
// controller logs them when it accepts the job. Each names the field and
// the fix.
func Warnings(job *batch.Job, l *Layout) []string {
	out := sizeWarnings(l)
	out = append(out, portWarnings(job, l)...)
	tasks := "spec.tasks"
	roles := l.roles()

	var members int32
	for _, r := range roles {
		members += int32(r.Replicas)
	}
	if job.Spec.MinAvailable < members && l.Elastic == nil { // an elastic job runs from minAvailable up
		out = append(out, fmt.Sprintf("spec.minAvailable: %d is below the %d pods of the Paddle roles (%s): Volcano may start part of the gang, and Paddle waits for every member; set minAvailable to %d",
			job.Spec.MinAvailable, members, l.ReplicaSummary(), members))
	}
	for _, r := range roles {
		ts := &job.Spec.Tasks[r.TaskIndex]
		p := fmt.Sprintf("%s[%d]", tasks, r.TaskIndex)
		if ts.MinAvailable != nil && *ts.MinAvailable < ts.Replicas && l.Elastic == nil {
			out = append(out, fmt.Sprintf("%s.minAvailable: %d is below the task's %d replicas; Paddle waits for every member of role %s, so leave it unset or set it to %d",
				p, *ts.MinAvailable, ts.Replicas, r.Role, ts.Replicas))
		}
		// An elastic launcher re-forms its world itself: restarted in
		// place it registers anew (ValidateJob allows OnFailure there,
		// and advises it over Never).
		if l.Elastic != nil && r.TaskIndex == l.Trainer.TaskIndex && ts.Template.Spec.RestartPolicy == v1.RestartPolicyNever {
			out = append(out, fmt.Sprintf("%s.template.spec.restartPolicy: Never; when the job's etcd store restarts or is re-created, every launcher exits at once (launch/controllers/controller.py: watch), every trainer pod ends, and Volcano may end the job as Failed before the pods are replaced; use OnFailure, which restarts the launchers in place",
				p))
		}
		if rp := ts.Template.Spec.RestartPolicy; rp != v1.RestartPolicyNever && l.Elastic == nil {
			shown := string(rp)
			if shown == "" {
				shown = "unset (Always)"
			}
			out = append(out, fmt.Sprintf("%s.template.spec.restartPolicy: %s; a Paddle process restarted in place rejoins peers that moved on; use Never and let the job's policies restart the gang",
				p, shown))
		}
		for _, pol := range ts.Policies {
			if pieceMeal(pol.Action) && l.Elastic == nil {
				out = append(out, fmt.Sprintf("%s.policies: %s on role %s replaces pods one by one; only RestartJob gives a consistent gang (pods of a new incarnation get new peer names)",
					p, pol.Action, r.Role))
			}
		}
		for ci := range ts.Template.Spec.Containers {
			c := &ts.Template.Spec.Containers[ci]
			if script, ok := shellScript(c); ok && !execRE.MatchString(script) {
				out = append(out, fmt.Sprintf("%s.template.spec.containers[%d]: the shell runs the trainer without exec; as PID 1 the shell ignores SIGTERM, so a stopped pod waits its whole grace period; end the script with `exec python ...`",
					p, ci))
			}
		}
	}
	for _, pol := range job.Spec.Policies {
		if pieceMeal(pol.Action) && l.Elastic == nil {
			out = append(out, fmt.Sprintf("spec.policies: %s replaces pods one by one; for Paddle roles only RestartJob gives a consistent gang", pol.Action))
		}
	}
	if l.Elastic != nil {
		out = append(out, elasticWarnings(job, l)...)
	}
	if (l.Mode == paddleapi.ModePS || l.Mode == paddleapi.ModeHeterPS) && !hasPolicy(job.Spec.Tasks[l.Trainer.TaskIndex].Policies, bus.TaskCompletedEvent, bus.CompleteJobAction) {
		out = append(out, fmt.Sprintf("%s[%d].policies: no TaskCompleted -> CompleteJob on the trainer task %q; parameter servers never exit on their own, so the job would run forever after training ends",
			tasks, l.Trainer.TaskIndex, l.Trainer.TaskName))
	}
	return out
}

// sizeWarnings: the lists checkListSizes found too long to reach a process,
// and which entry points their absence rules out.
func sizeWarnings(l *Layout) []string {
	var out []string
	if l.sizes.narrowBarrier {
		out = append(out, fmt.Sprintf("%s: the barrier init container waits for the %d pservers only: the names of all %d pods exceed what Linux lets one environment variable hold (MAX_ARG_STRLEN, 128 KiB)",
			l.listPath(listTrainerHosts), l.PServer.Replicas, l.PServer.Replicas+l.Trainer.Replicas))
	}
	if l.sizes.omitted[listTrainerHosts] || l.sizes.omitted[listTrainerEndpoints] {
		out = append(out, fmt.Sprintf("%s: the trainer lists of %d trainers exceed what Linux lets one environment variable hold (MAX_ARG_STRLEN, 128 KiB), so pods get no PADDLE_TRAINERS, PADDLE_TRAINER_ENDPOINTS, PADDLE_TRAINERS_ENDPOINTS or PADDLE_TRAINER_IPS: start Paddle with `python train.py` (role maker) or the Fluid CTR image; fleetrun and python -m paddle.distributed.launch need those lists in PS mode",
			l.listPath(listTrainerHosts), l.Trainer.Replicas))
	}
	return out
}

// portWarnings: the plugin declares its ports (Layout.ports) only where no
// container of the pod has that name or number (pod.go: declarePorts),
// so a template port that shares one but not the other leaves Paddle's
// port undeclared; and a pod with more GPUs than --ports-per-pod makes the
// legacy launcher (fleet/cloud_utils.py: get_cloud_cluster, Paddle
// v2.6.2) ignore PADDLE_PORT, since it gives each GPU process its own
// port and uses PADDLE_PORT only when TRAINER_PORTS_NUM covers them all,
// else its own start port (6170 by default) outside the declared range.
func portWarnings(job *batch.Job, l *Layout) []string {
	if l.Elastic != nil {
		return nil // no ports are declared (Layout.ports)
	}
	var out []string
	for _, r := range l.roles() {
		ts := &job.Spec.Tasks[r.TaskIndex]
		p := fmt.Sprintf("spec.tasks[%d]", r.TaskIndex)
		mine := l.ports(r, 0)
		if r.Replicas > 1 {
			mine = append(mine, l.ports(r, r.Replicas-1)...)
		}
		for ci, c := range ts.Template.Spec.Containers {
			for pi, have := range c.Ports {
				for _, w := range mine {
					if (have.Name == w.Name) == (have.ContainerPort == w.ContainerPort) {
						continue // unrelated, or exactly the plugin's port
					}
					out = append(out, fmt.Sprintf("%s.template.spec.containers[%d].ports[%d]: port %q (%d) has the name or the number of the plugin's port %q (%d), so the plugin does not declare that port on these pods; give your port another name and number, or declare exactly %q %d",
						p, ci, pi, have.Name, have.ContainerPort, w.Name, w.ContainerPort, w.Name, w.ContainerPort))
				}
			}
		}
		if l.Mode == paddleapi.ModeCollective && r.gpus > int64(l.Args.PortsPerPod) {
			out = append(out, fmt.Sprintf("%s: pods ask for %d GPUs but --ports-per-pod is %d: the legacy launcher (python -m paddle.distributed.fleet.launch) gives each GPU process its own port and ignores PADDLE_PORT when TRAINER_PORTS_NUM is smaller than the GPU count; pass --ports-per-pod=%d or more to the plugin",
				p, r.gpus, l.Args.PortsPerPod, r.gpus))
		}
	}
	return out
}

// pieceMeal actions replace part of a gang.
func pieceMeal(a bus.Action) bool {
	return a == bus.RestartTaskAction || a == bus.RestartPodAction || a == bus.RestartPartitionAction
}

// hasPolicy: some policy maps event to action (action "" matches any).
func hasPolicy(policies []batch.LifecyclePolicy, event bus.Event, action bus.Action) bool {
	for _, p := range policies {
		if action != "" && p.Action != action {
			continue
		}
		if p.Event == event {
			return true
		}
		for _, e := range p.Events {
			if e == event {
				return true
			}
		}
	}
	return false
}

// execRE finds `exec` as a command of a shell script: at its start or after
// a separator, newline, `then`, `do` or `else`.
var execRE = regexp.MustCompile(`(^|[;&|\n(]|\bthen|\bdo|\belse)\s*exec\s`)

// shellScript returns the script of a container started as `sh -c SCRIPT`
// (also bash, dash, ash; in command or split over command and args).
func shellScript(c *v1.Container) (string, bool) {
	argv := append(append([]string(nil), c.Command...), c.Args...)
	if len(c.Command) == 0 || len(argv) < 3 {
		return "", false
	}
	switch path.Base(argv[0]) {
	case "sh", "bash", "dash", "ash", "zsh":
	default:
		return "", false
	}
	for i := 1; i < len(argv)-1; i++ {
		if a := argv[i]; strings.HasPrefix(a, "-") && strings.Contains(a, "c") && !strings.HasPrefix(a, "--") {
			return argv[i+1], true
		}
	}
	return "", false
}

// elasticWarnings are the warnings of an elastic job: policies that would
// restart the survivors Paddle keeps running.
func elasticWarnings(job *batch.Job, l *Layout) []string {
	var out []string
	check := func(path string, policies []batch.LifecyclePolicy) {
		for _, pol := range policies {
			if pol.Action == bus.RestartJobAction || pol.Action == bus.RestartTaskAction || pol.Action == bus.RestartPartitionAction {
				out = append(out, fmt.Sprintf("%s: %s restarts the pods Paddle keeps training in an elastic job; remove it: a lost or failed trainer is replaced on its own and the survivors re-form the world", path, pol.Action))
			}
		}
	}
	check("spec.policies", job.Spec.Policies)
	check(fmt.Sprintf("spec.tasks[%d].policies", l.Trainer.TaskIndex), job.Spec.Tasks[l.Trainer.TaskIndex].Policies)
	return out
}
