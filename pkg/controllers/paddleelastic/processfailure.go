package paddleelastic

import (
	"context"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// Paddle's launcher restarts the world itself when one of its processes
// fails: it puts "failed" on the job's status key, deletes every heartbeat
// and starts its processes again, up to PADDLE_MAX_RESTART times, which
// also counts every membership change (controllers/controller.py:
// Controller.watch; controllers/collective.py:
// CollectiveElasticController.run). The pod never ends, so a process that
// crashes at every start re-forms the whole world over and over (16 times
// in 60 s in one run) and no pod-level bound sees it. The keeper reports
// each such "failed" (BeatKeeper.Failed); it counts toward
// --elastic-max-failures like a crashed launcher, except:
//   - several within processFailureWindow count once: one crash fails the
//     collectives of the other launchers' processes too;
//   - within lossWindow of a trainer pod going: a lost peer fails the
//     survivors' collectives, and the pod's loss is not a crash;
//   - within a store fault (storefault.go).
const (
	processFailureWindow = 10 * time.Second
	lossWindow           = 30 * time.Second
	// jobTimesMemory bounds how long the per-job times are kept.
	jobTimesMemory = 10 * time.Minute
)

// syncProcessFailure judges one "failed" a launcher of the job put at w.at.
func (c *Controller) syncProcessFailure(ctx context.Context, w work) error {
	job, err := c.Jobs.Jobs(w.namespace).Get(w.job)
	if err != nil || job.DeletionTimestamp != nil {
		return nil
	}
	s, elastic := c.elasticSpec(job)
	if !elastic || job.Status.State.Phase != batch.Running {
		return nil
	}
	at := time.Unix(0, w.at)
	key := w.namespace + "/" + w.job
	c.mu.Lock()
	lost, prev := c.lostAt[key], c.processFailedAt[key]
	counted := !prev.IsZero() && at.Sub(prev) >= 0 && at.Sub(prev) < processFailureWindow
	if !counted {
		c.processFailedAt[key] = at
	}
	c.pruneJobTimes(at)
	c.mu.Unlock()
	switch {
	case counted:
		return nil
	case !lost.IsZero() && absDuration(at.Sub(lost)) < lossWindow:
		klog.InfoS("A process of an elastic Paddle job failed after a trainer pod went; not counted", "job", klog.KObj(job), "podGoneAt", lost)
		return nil
	}
	if f, ok := c.storeFaultAt(job, at, at); ok {
		klog.InfoS("A process of an elastic Paddle job failed when its store could not serve; not counted", "job", klog.KObj(job), "store", f.why)
		return nil
	}
	n, _ := strconv.Atoi(job.Annotations[FailuresAnnotation])
	if n >= s.Args.Elastic.MaxFailures {
		return c.fail(ctx, job, "a training process", "Paddle's launcher reported it failed and restarted the world", n)
	}
	if err := c.countFailure(ctx, job, n+1); err != nil {
		return err
	}
	klog.InfoS("A process of an elastic Paddle job failed; Paddle restarted the world", "job", klog.KObj(job), "failures", n+1)
	c.Recorder.Eventf(job, v1.EventTypeNormal, ReplacedReason, "a training process failed and Paddle's launcher restarted the world (the job's status key said %q); failure %d of the %d --elastic-max-failures allows",
		statusFailed, n+1, s.Args.Elastic.MaxFailures)
	return nil
}

// pruneJobTimes forgets per-job times older than jobTimesMemory; c.mu is
// held.
func (c *Controller) pruneJobTimes(now time.Time) {
	for _, m := range []map[string]time.Time{c.lostAt, c.processFailedAt} {
		for k, t := range m {
			if now.Sub(t) > jobTimesMemory {
				delete(m, k)
			}
		}
	}
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
