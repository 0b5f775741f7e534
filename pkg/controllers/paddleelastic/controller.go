// Package paddleelastic is the controller of vc-controller-manager-paddle
// that keeps elastic Paddle jobs (paddle plugin argument --elastic-max)
// going when their pods come and go:
//
//   - loss notice: when a trainer pod goes (deleted, resized away,
//     preempted, evicted, failed), it deletes that pod's heartbeat key in
//     the job's etcd at once, so that the survivors re-form their world
//     without waiting for the lost launcher's lease to expire (Paddle's
//     stopped launcher leaves its key until then);
//   - re-creation: a trainer pod that ended without Paddle having marked the
//     job completed (a launcher that gave up waiting for peers exits 0, one
//     stopped with its processes 241) is deleted, and Volcano's job
//     controller creates it again (syncJob creates missing pods); the
//     survivors are left alone;
//   - failure bound: a trainer that crashed (any other exit code) is
//     replaced too (or restarted in place by the kubelet, restartPolicy
//     OnFailure), and a process failure Paddle's launcher restarts the
//     world for counts as well (processfailure.go), up to
//     --elastic-max-failures per job; the next one fails the job, with a
//     Warning event naming it. Exits when the job's store could not serve
//     are not crashes (storefault.go);
//   - the etcd: when the job's etcd pod is gone while the job runs, it is
//     created again (the plugin creates it when the job starts), and on
//     every change of the etcd pod its address (IP, readiness) is written
//     to the EndpointSlice of the job's selector-less etcd Service
//     (paddlekube.EnsureEtcdEndpoints). An object under the store's name
//     that the job does not control is left alone and reported as a
//     Warning event (paddlejob.StoreConflictReason).
package paddleelastic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/volcano/pkg/controllers/framework"

	"github.com/volcano-paddle/volcano-paddle/pkg/controllers/controllerkit"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlekube"

	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
)

// Name is the controller's name for --controllers.
const Name = "paddle-elastic-controller"

// Reasons of the events elastic jobs get.
const (
	ReplacedReason     = "PaddleElasticReplaced"
	FailuresReason     = "PaddleElasticTooManyFailures"
	EtcdRestoredReason = "PaddleEtcdRestored"
)

// FailuresAnnotation counts, on the Job, the crashed trainer pods replaced.
const FailuresAnnotation = "paddle.volcano.sh/elastic-failures"

// EtcdURLAnnotation, on a Job, points the controller at its etcd instead of
// the etcd pod's IP. Only loopback URLs are honoured: it exists for a
// controller that reaches the etcd through a local port (a test, a
// port-forward), never to send the controller elsewhere.
const EtcdURLAnnotation = "paddle.volcano.sh/etcd-client-url"

// NetworksEnv, in the controller manager's environment, lists the networks
// (CIDRs, comma-separated) an etcd pod's IP must be in for the controller
// to connect to it; unset: any. The local cluster sets it to its loopback
// and real-node ranges: its simulated pods' IPs lead off the machine.
const NetworksEnv = "PADDLE_ELASTIC_ETCD_NETWORKS"

// exitTerminated is a container that ended on SIGTERM (143): the pod was
// being stopped. Not a crash; nor are Paddle's own stop and SIGTERM exits
// (paddleapi.ExitStopped, paddleapi.ExitSignalled).
const exitTerminated = 143

func init() {
	framework.RegisterController(&Controller{})
}

// work is one thing to do for a pod.
type work struct {
	kind      workKind
	namespace string
	pod       string
	uid       types.UID
	// job and ip of a trainer pod, for the loss notice after it is gone.
	job, ip string
	// final: the pod is deleted, so its launcher has stopped.
	final bool
	// at: when a launcher said a process failed (paddleFailed), Unix ns.
	at int64
}

type workKind int

const (
	// notice: the pod went; remove its heartbeat key (revoke its lease).
	notice workKind = iota
	// nudge: a noticed pod is deleted; restart the survivors' rendezvous
	// again if the notice's restart may have been lost (NudgeAfterLoss).
	nudge
	// ended: the pod's containers ended; re-create or fail.
	ended
	// etcdGone: the job's etcd pod is gone or failed.
	etcdGone
	// etcdAddress: the job's etcd pod changed; publish its address.
	etcdAddress
	// restarted: a launcher restarted in place (restartPolicy
	// OnFailure); count its crash or not.
	restarted
	// paddleFailed: a launcher restarted the world after one of its
	// processes failed; count it or not.
	paddleFailed
)

// Controller implements framework.Controller.
type Controller struct {
	controllerkit.Base
	pods corelisters.PodLister
	// storeObjects watches the stores' Services, NetworkPolicies and
	// EndpointSlices (label paddlejob.EtcdOfLabel), so that the periodic
	// check reads caches and calls the API only to repair.
	storeObjects informers.SharedInformerFactory
	services     corelisters.ServiceLister
	policies     networkinglisters.NetworkPolicyLister
	slices       discoverylisters.EndpointSliceLister
	http         noticeClient
	networks     []*net.IPNet
	// notices are loss notices; they have their own workers so that they
	// never wait behind slower work.
	notices controllerkit.Queue[work]
	queue   controllerkit.Queue[work]

	keepersMu sync.Mutex
	keepers   map[types.UID]*keeperRun

	// The last known IP of each trainer pod (a deleted pod's final state
	// may be a tombstone without it), and the pods already noticed.
	mu      sync.Mutex
	noticed map[types.UID]bool
	ips     map[types.UID]string
	// restarts is, per trainer pod, the container restarts judged
	// (restartPolicy OnFailure): those seen when the controller first saw
	// the pod are not judged again.
	restarts map[types.UID]int32

	// faults are the store faults seen that the store pod cannot show any
	// more (storefault.go); now is the controller's clock.
	faults storeFaultLog
	now    func() time.Time
	// Per job (namespace/name): when a trainer pod of it last went, and
	// when a process failure of it was last counted (processfailure.go).
	lostAt, processFailedAt map[string]time.Time

	specsMu sync.Mutex
	specs   map[types.UID]parsedSpec
}

// noticeClient builds the gateway of a job's etcd (tests replace it).
type noticeClient func(url string) *paddleetcd.Gateway

var _ framework.Controller = &Controller{}

// Name implements framework.Controller.
func (c *Controller) Name() string { return Name }

// Initialize implements framework.Controller.
func (c *Controller) Initialize(opt *framework.ControllerOption) error {
	nets, err := parseNetworks(os.Getenv(NetworksEnv))
	if err != nil {
		return err
	}
	c.networks = nets
	// Only the pods of elastic jobs and their etcd pods.
	c.Base, _ = controllerkit.NewBase(opt, paddleapi.ElasticLabel)
	podInformer := c.Factory.Core().V1().Pods()
	c.pods = podInformer.Lister()
	c.storeObjects = controllerkit.LabelledInformers(opt.KubeClient, paddlejob.EtcdOfLabel)
	svc := c.storeObjects.Core().V1().Services()
	np := c.storeObjects.Networking().V1().NetworkPolicies()
	sl := c.storeObjects.Discovery().V1().EndpointSlices()
	c.services, c.policies, c.slices = svc.Lister(), np.Lister(), sl.Lister()
	c.Synced = append(c.Synced, svc.Informer().HasSynced, np.Informer().HasSynced, sl.Informer().HasSynced)
	c.init()
	if _, err := podInformer.Informer().AddEventHandler(c.handlers()); err != nil {
		return err
	}
	c.Synced = append(c.Synced, podInformer.Informer().HasSynced)
	return nil
}

func (c *Controller) init() {
	c.queue = controllerkit.NewQueue[work](Name)
	c.notices = controllerkit.NewQueue[work](Name + "-notices")
	c.noticed = map[types.UID]bool{}
	c.ips = map[types.UID]string{}
	c.restarts = map[types.UID]int32{}
	c.lostAt = map[string]time.Time{}
	c.processFailedAt = map[string]time.Time{}
	c.keepers = map[types.UID]*keeperRun{}
	if c.now == nil {
		c.now = time.Now
	}
	if c.http == nil {
		client := newHTTPClient()
		c.http = func(u string) *paddleetcd.Gateway { return &paddleetcd.Gateway{URL: u, Client: client} }
	}
}

func parseNetworks(s string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		_, n, err := net.ParseCIDR(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", NetworksEnv, err)
		}
		out = append(out, n)
	}
	return out, nil
}

func newHTTPClient() *http.Client {
	return &http.Client{Timeout: paddleetcd.Timeout, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}}
}

func (c *Controller) handlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.observe(obj, false) },
		UpdateFunc: func(_, obj interface{}) { c.observe(obj, false) },
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			c.observe(obj, true)
		},
	}
}

// observe queues what a pod's new state calls for.
func (c *Controller) observe(obj interface{}, deleted bool) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	w := work{namespace: pod.Namespace, pod: pod.Name, uid: pod.UID}
	if pod.Labels[paddleapi.ElasticLabel] == paddleapi.ElasticEtcd {
		a := w
		a.kind = etcdAddress
		c.queue.Add(a)
		c.observeStore(pod, deleted)
		if deleted || pod.Status.Phase == v1.PodFailed {
			w.kind = etcdGone
			c.queue.Add(w)
		}
		return
	}
	job := pod.Labels[batch.JobNameKey]
	if job == "" {
		return
	}
	c.mu.Lock()
	if pod.Status.PodIP != "" {
		c.ips[pod.UID] = pod.Status.PodIP
	}
	ip := c.ips[pod.UID]
	gone := deleted || pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodFailed || pod.Status.Phase == v1.PodSucceeded
	wasNoticed := c.noticed[pod.UID]
	first := gone && !wasNoticed
	if first {
		c.noticed[pod.UID] = true
		c.lostAt[pod.Namespace+"/"+job] = c.now()
	}
	restartedNow := false
	if n := restartCount(pod); !deleted {
		seen, known := c.restarts[pod.UID]
		restartedNow = known && n > seen
		if !known || n > seen {
			c.restarts[pod.UID] = n
		}
	}
	if deleted {
		// Nothing more will come for this UID.
		delete(c.noticed, pod.UID)
		delete(c.ips, pod.UID)
		delete(c.restarts, pod.UID)
	}
	c.mu.Unlock()
	if restartedNow {
		r := w
		r.kind = restarted
		c.queue.Add(r)
	}
	if first && ip != "" {
		n := w
		n.kind, n.job, n.ip, n.final = notice, job, ip, deleted
		c.notices.Add(n)
	} else if deleted && wasNoticed && ip != "" {
		n := w
		n.kind, n.job, n.ip, n.final = nudge, job, ip, true
		c.notices.Add(n)
	}
	if !deleted && pod.DeletionTimestamp == nil && (pod.Status.Phase == v1.PodFailed || pod.Status.Phase == v1.PodSucceeded) {
		w.kind = ended
		c.queue.Add(w)
	}
}

// notice removes the heartbeat key of the launcher that ran at the lost
// pod's IP (NoticeLoss revokes its lease). Worth something only within the lease's seconds: a failed
// attempt is retried a few times, quickly.
func (c *Controller) notice(ctx context.Context, w work) error {
	job, err := c.Jobs.Jobs(w.namespace).Get(w.job)
	if err != nil || job.DeletionTimestamp != nil {
		return nil // no job, no survivors
	}
	if _, elastic := c.elasticSpec(job); !elastic {
		return nil
	}
	switch job.Status.State.Phase {
	case batch.Running, batch.Pending, batch.Restarting:
	default:
		return nil // finishing: no world to re-form
	}
	u, err := c.etcdURL(job)
	if err != nil {
		klog.V(2).InfoS("No etcd to notify of a lost Paddle pod", "job", klog.KObj(job), "pod", klog.KRef(w.namespace, w.pod), "reason", err.Error())
		return nil
	}
	if other := c.ipHolder(w.namespace, w.job, w.ip, w.uid); other != "" {
		// The IP went to a new pod: its launcher's record would put it at
		// this IP too, and the notice would remove a live launcher. The
		// lost pod's sandbox, and so its launcher, is gone (a pod's IP is
		// released only then), and a starting launcher wipes every
		// heartbeat of its job anyway (register_heartbeat): its lease
		// expires on its own.
		klog.V(2).InfoS("No loss notice: the lost pod's IP belongs to another pod", "job", klog.KObj(job), "pod", klog.KRef(w.namespace, w.pod), "podIP", w.ip, "other", other)
		return nil
	}
	start := time.Now()
	if w.kind == notice {
		names, err := NoticeLoss(ctx, c.http(u), paddlejob.JobID(job), w.ip, c.keeperOf(job.UID))
		if err != nil {
			return fmt.Errorf("loss notice for job %s/%s: %w", job.Namespace, job.Name, err)
		}
		klog.InfoS("Notified the survivors of a lost Paddle pod", "job", klog.KObj(job), "pod", klog.KRef(w.namespace, w.pod), "podIP", w.ip, "paddlePods", names, "took", time.Since(start))
	}
	if w.final {
		key, err := NudgeAfterLoss(ctx, c.http(u), paddlejob.JobID(job), w.ip)
		if err != nil {
			return fmt.Errorf("restarting the rendezvous of job %s/%s after a loss: %w", job.Namespace, job.Name, err)
		}
		if key != "" {
			klog.InfoS("Restarted the survivors' rendezvous again: the lost Paddle pod's launcher had stopped with its rendezvous record still there", "job", klog.KObj(job), "pod", klog.KRef(w.namespace, w.pod), "podIP", w.ip, "heartbeat", key)
		}
	}
	return nil
}

// etcdURL is the client URL of the job's etcd.
func (c *Controller) etcdURL(job *batch.Job) (string, error) {
	if s := job.Annotations[EtcdURLAnnotation]; s != "" {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "http" {
			return "", fmt.Errorf("annotation %s=%q is not an http:// URL", EtcdURLAnnotation, s)
		}
		if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
			return "", fmt.Errorf("annotation %s=%q: only loopback addresses are honoured", EtcdURLAnnotation, s)
		}
		return s, nil
	}
	pod, err := c.pods.Pods(job.Namespace).Get(paddlejob.EtcdName(job.Name))
	if err != nil {
		return "", fmt.Errorf("etcd pod: %w", err)
	}
	if pod.Status.PodIP == "" || !metav1.IsControlledBy(pod, job) {
		return "", fmt.Errorf("etcd pod %s has no IP yet", pod.Name)
	}
	if ip := net.ParseIP(pod.Status.PodIP); len(c.networks) > 0 && !inNetworks(ip, c.networks) {
		return "", fmt.Errorf("etcd pod %s's IP %s is outside %s", pod.Name, pod.Status.PodIP, NetworksEnv)
	}
	return "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(paddlejob.EtcdClientPort)), nil
}

func inNetworks(ip net.IP, nets []*net.IPNet) bool {
	for _, n := range nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// start starts the informers and waits for every cache.
func (c *Controller) start(stopCh <-chan struct{}) bool {
	c.storeObjects.Start(stopCh)
	return c.Start(stopCh, Name)
}

// Run implements framework.Controller.
func (c *Controller) Run(stopCh <-chan struct{}) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	defer c.notices.ShutDown()
	if !c.start(stopCh) {
		return
	}
	controllerkit.Workers(stopCh, 1, func() bool { return c.processNext(c.queue, 10) })
	controllerkit.Workers(stopCh, 2, func() bool { return c.processNext(c.notices, 3) })
	go wait.Until(c.syncKeepers, 2*time.Second, stopCh)
	go wait.Until(c.resyncEtcd, etcdResync, stopCh)
	<-stopCh
	c.stopKeepers()
}

func (c *Controller) processNext(q controllerkit.Queue[work], retries int) bool {
	return controllerkit.ProcessNext(q, retries, func(w work) error {
		switch w.kind {
		case notice, nudge:
			return c.notice(context.Background(), w)
		case ended:
			return c.syncEnded(context.Background(), w)
		case etcdGone:
			return c.syncEtcd(context.Background(), w)
		case etcdAddress:
			return c.syncEtcdAddress(context.Background(), w)
		case restarted:
			return c.syncRestarted(context.Background(), w)
		case paddleFailed:
			return c.syncProcessFailure(context.Background(), w)
		}
		return nil
	}, func(w work, err error) {
		klog.ErrorS(err, "Elastic Paddle job", "pod", klog.KRef(w.namespace, w.pod))
	})
}

// trainerOf is the trainer pod w names, the incarnation w saw and not
// going (one gone already is Volcano's to create again), and its job, when
// that is an elastic job that runs or waits (activeElastic).
func (c *Controller) trainerOf(w work) (*v1.Pod, *batch.Job, paddlejob.Spec, bool) {
	pod, err := c.pods.Pods(w.namespace).Get(w.pod)
	if err != nil || pod.UID != w.uid || pod.DeletionTimestamp != nil {
		return nil, nil, paddlejob.Spec{}, false
	}
	job, err := c.Jobs.Jobs(w.namespace).Get(pod.Labels[batch.JobNameKey])
	if err != nil {
		return nil, nil, paddlejob.Spec{}, false
	}
	s, ok := c.activeElastic(job)
	return pod, job, s, ok
}

// activeElastic is the job's arguments when it is an elastic job, not
// being deleted, that runs or waits (Running, Pending): not one that
// restarts or has finished, which has no world to keep.
func (c *Controller) activeElastic(job *batch.Job) (paddlejob.Spec, bool) {
	if job.DeletionTimestamp != nil {
		return paddlejob.Spec{}, false
	}
	s, elastic := c.elasticSpec(job)
	switch job.Status.State.Phase {
	case batch.Running, batch.Pending:
		return s, elastic
	}
	return s, false
}

// syncEnded handles a trainer pod whose containers ended.
func (c *Controller) syncEnded(ctx context.Context, w work) error {
	pod, job, s, ok := c.trainerOf(w)
	if !ok {
		return nil
	}
	a := s.Args
	switch {
	case pod.Status.Phase == v1.PodSucceeded:
		// Exit 0 is completion only when Paddle said so.
		u, err := c.etcdURL(job)
		if err != nil {
			return err
		}
		done, err := Completed(ctx, c.http(u), paddlejob.JobID(job))
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		return c.replace(ctx, job, pod, "its launcher exited 0 without Paddle having completed the job (it gave up waiting for peers)")
	case crashed(pod):
		if f, ok := c.storeFaultAt(job, pod.CreationTimestamp.Time, exitTime(pod)); ok {
			// Replaced at once even while the store is down (the new
			// launcher may exit again, not counted either): a job all of
			// whose pods have ended is finished for Volcano
			// (state/running.go).
			return c.replace(ctx, job, pod, fmt.Sprintf("its launcher exited (%s) when the job's store could not serve (%s); not counted toward --elastic-max-failures", exitSummary(pod), f.why))
		}
		n, _ := strconv.Atoi(job.Annotations[FailuresAnnotation])
		if n >= a.Elastic.MaxFailures {
			return c.fail(ctx, job, "pod "+pod.Name, exitSummary(pod), n)
		}
		if err := c.countFailure(ctx, job, n+1); err != nil {
			return err
		}
		return c.replace(ctx, job, pod, fmt.Sprintf("it crashed (%s); failure %d of the %d --elastic-max-failures allows", exitSummary(pod), n+1, a.Elastic.MaxFailures))
	default:
		return c.replace(ctx, job, pod, "it was lost ("+exitSummary(pod)+")")
	}
}

// elasticSpec is the job's paddle plugin arguments; elastic is false for
// a job they do not declare elastic (or that does not parse). Parsed once
// per job generation (the arguments are in the spec): the periodic passes
// over every job read them from the cache.
func (c *Controller) elasticSpec(job *batch.Job) (paddlejob.Spec, bool) {
	c.specsMu.Lock()
	defer c.specsMu.Unlock()
	if e, ok := c.specs[job.UID]; ok && e.generation == job.Generation {
		return e.spec, e.elastic
	}
	s, _ := paddlejob.Read(job)
	if c.specs == nil || len(c.specs) > maxSpecs {
		c.specs = map[types.UID]parsedSpec{}
	}
	c.specs[job.UID] = parsedSpec{generation: job.Generation, spec: s, elastic: s.Elastic()}
	return s, s.Elastic()
}

// parsedSpec is a job's arguments as parsed at one generation, and its
// layout once asked for (layout).
type parsedSpec struct {
	generation int64
	spec       paddlejob.Spec
	elastic    bool
	layout     *paddlejob.Layout
}

// layout is the job's validated layout, built once per generation.
func (c *Controller) layout(job *batch.Job, s paddlejob.Spec) (*paddlejob.Layout, error) {
	c.specsMu.Lock()
	e, ok := c.specs[job.UID]
	c.specsMu.Unlock()
	if ok && e.generation == job.Generation && e.layout != nil {
		return e.layout, nil
	}
	l, err := s.Validate(job)
	if err != nil {
		return nil, err
	}
	c.specsMu.Lock()
	if e, ok := c.specs[job.UID]; ok && e.generation == job.Generation {
		e.layout = l
		c.specs[job.UID] = e
	}
	c.specsMu.Unlock()
	return l, nil
}

// maxSpecs bounds the parse cache; syncKeepers also drops the jobs gone.
const maxSpecs = 100000

// forgetSpecs drops the parsed arguments of the jobs not in keep.
func (c *Controller) forgetSpecs(keep map[types.UID]bool) {
	c.specsMu.Lock()
	defer c.specsMu.Unlock()
	for uid := range c.specs {
		if !keep[uid] {
			delete(c.specs, uid)
		}
	}
}

// crashed: a container of the pod ended with an exit code that is neither
// success, nor Paddle stopping its processes, nor SIGTERM.
func crashed(pod *v1.Pod) bool {
	for _, s := range pod.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			switch t.ExitCode {
			case 0, paddleapi.ExitStopped, exitTerminated, paddleapi.ExitSignalled:
			default:
				return true
			}
		}
	}
	return false
}

func exitSummary(pod *v1.Pod) string {
	for _, s := range pod.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("container %s exit code %d %s", s.Name, t.ExitCode, t.Reason)
		}
	}
	if pod.Status.Reason != "" {
		return pod.Status.Reason
	}
	return "phase " + string(pod.Status.Phase)
}

// replace deletes the pod; Volcano's job controller creates it again with
// the same name and env, and Paddle lets it join the running world.
func (c *Controller) replace(ctx context.Context, job *batch.Job, pod *v1.Pod, why string) error {
	if err := c.deletePod(ctx, pod); err != nil {
		return err
	}
	klog.InfoS("Replacing a pod of an elastic Paddle job", "job", klog.KObj(job), "pod", klog.KObj(pod), "why", why)
	c.Recorder.Eventf(job, v1.EventTypeNormal, ReplacedReason, "replacing pod %s: %s; the other pods keep training", pod.Name, why)
	return nil
}

// countFailure records n on the job. An update, not a patch: Volcano's
// controller role may update jobs but not patch them (its release
// manifest), and the resourceVersion makes a concurrent count fail and
// retry instead of being lost.
func (c *Controller) countFailure(ctx context.Context, job *batch.Job, n int) error {
	j := job.DeepCopy()
	if j.Annotations == nil {
		j.Annotations = map[string]string{}
	}
	j.Annotations[FailuresAnnotation] = strconv.Itoa(n)
	_, err := c.VC.BatchV1alpha1().Jobs(job.Namespace).Update(ctx, j, metav1.UpdateOptions{})
	return err
}

// fail ends the job as Failed: its status phase goes to Failed, which
// Volcano's job controller handles like any finished job (state/finished.go:
// it stops the remaining pods and keeps the job).
func (c *Controller) fail(ctx context.Context, job *batch.Job, what, exit string, n int) error {
	msg := fmt.Sprintf("%s crashed (%s) after %d trainer crashes (--elastic-max-failures=%d); the job fails instead of re-forming its world for ever",
		what, exit, n, n)
	patch, _ := json.Marshal(map[string]interface{}{"status": map[string]interface{}{
		"state": map[string]interface{}{"phase": batch.Failed, "reason": FailuresReason, "message": msg},
	}})
	if _, err := c.VC.BatchV1alpha1().Jobs(job.Namespace).Patch(ctx, job.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	klog.InfoS("Failing an elastic Paddle job", "job", klog.KObj(job), "what", what, "failures", n)
	c.Recorder.Event(job, v1.EventTypeWarning, FailuresReason, msg)
	return nil
}

// deletePod deletes pod, only the incarnation seen (a UID precondition);
// one already gone or replaced is no error.
func (c *Controller) deletePod(ctx context.Context, pod *v1.Pod) error {
	uid := pod.UID
	err := c.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// etcdJob is the job whose etcd pod would be named pod, or nil.
func (c *Controller) etcdJob(namespace, pod string) *batch.Job {
	name, ok := strings.CutPrefix(pod, paddlejob.EtcdName(""))
	if !ok || name == "" {
		return nil
	}
	job, err := c.Jobs.Jobs(namespace).Get(name)
	if err != nil || paddlejob.EtcdName(job.Name) != pod {
		return nil
	}
	return job
}

// syncEtcd re-creates the etcd of a running elastic job whose etcd pod is
// gone; a failed one (evicted) is deleted first, only if it is the job's.
func (c *Controller) syncEtcd(ctx context.Context, w work) error {
	job := c.etcdJob(w.namespace, w.pod)
	if pod, err := c.pods.Pods(w.namespace).Get(w.pod); err == nil {
		if job != nil && metav1.IsControlledBy(pod, job) && pod.UID == w.uid && pod.Status.Phase == v1.PodFailed && pod.DeletionTimestamp == nil {
			return c.deletePod(ctx, pod) // the delete event brings it back here
		}
		return nil
	}
	if job == nil || !paddlejob.Serves(job) {
		return nil
	}
	s, ok := c.activeElastic(job)
	if !ok {
		return nil
	}
	if !c.hasTrainerPods(job) {
		return nil // waiting in its queue: the store comes with the trainers
	}
	if err := paddlekube.EnsureEtcd(ctx, c.Kube, job, s, true); err != nil {
		return c.storeConflict(job, err)
	}
	klog.InfoS("Re-created the etcd of an elastic Paddle job", "job", klog.KObj(job))
	c.Recorder.Event(job, v1.EventTypeWarning, EtcdRestoredReason,
		"re-created the job's etcd pod, which was gone while the job ran; its launchers exited on the loss and start again (in place with restartPolicy OnFailure, their pods replaced with Never), without counting toward --elastic-max-failures, and register with the new, empty store")
	return nil
}

// syncEtcdAddress publishes the etcd pod's address (IP and readiness) in
// the EndpointSlice of the job's selector-less etcd Service, or no address
// while the pod is gone. A pod under the store's name that the job does
// not control is never published.
func (c *Controller) syncEtcdAddress(ctx context.Context, w work) error {
	// A deleted job's slice goes with it (owner reference); a restarting
	// or finished job has no store to publish: OnJobDelete removed it,
	// with its EndpointSlice, which must not come back.
	job := c.etcdJob(w.namespace, w.pod)
	if job == nil {
		return nil
	}
	if _, ok := c.activeElastic(job); !ok {
		return nil
	}
	pod, err := c.pods.Pods(w.namespace).Get(w.pod)
	if apierrors.IsNotFound(err) {
		// Withdraw the address of a started job's lost etcd (syncEtcd
		// brings a new one); a job not started has none.
		if !paddlejob.Serves(job) {
			return nil
		}
		pod, err = nil, nil
	}
	if err != nil {
		return err
	}
	return c.storeConflict(job, paddlekube.EnsureEtcdEndpoints(ctx, c.Kube, job, pod))
}

// storeConflict turns a *paddlekube.StoreConflictError into a Warning event
// on the job (and no retry: the object stays until someone removes it, and
// the periodic check reports it again); other errors are returned.
func (c *Controller) storeConflict(job *batch.Job, err error) error {
	var conflict *paddlekube.StoreConflictError
	if !errors.As(err, &conflict) {
		return err
	}
	klog.InfoS("Elastic Paddle job's etcd store name is taken", "job", klog.KObj(job), "kind", conflict.Kind, "name", conflict.Name, "owner", conflict.Owner)
	c.Recorder.Event(job, v1.EventTypeWarning, paddlejob.StoreConflictReason, conflict.Error())
	return nil
}

// etcdResync is how often the etcd objects of running elastic jobs are
// checked: a deleted etcd pod comes back at once (its delete event), a
// deleted Service, EndpointSlice or NetworkPolicy within this period.
const etcdResync = 30 * time.Second

// resyncEtcd re-creates missing etcd objects of running elastic jobs (and
// re-writes the etcd address from the pod as read, should an update have
// been missed).
func (c *Controller) resyncEtcd() {
	jobs, err := c.Jobs.List(labels.Everything())
	if err != nil {
		return
	}
	for _, job := range jobs {
		if !paddlejob.Serves(job) {
			continue
		}
		s, ok := c.activeElastic(job)
		if !ok {
			continue
		}
		c.unblockStore(job)
		withPod := c.hasTrainerPods(job)
		if c.storeIntact(job, s, withPod) {
			continue
		}
		if err := c.storeConflict(job, paddlekube.EnsureEtcd(context.Background(), c.Kube, job, s, withPod)); err != nil {
			klog.V(2).InfoS("Checking the etcd objects of an elastic Paddle job", "job", klog.KObj(job), "err", err)
		}
	}
}

// storeStuckAfter is how long past its deletion deadline (deletion
// timestamp: the request plus the grace period) the job's store pod may
// stay before it is deleted at once.
const storeStuckAfter = time.Minute

// EtcdForceDeletedReason is the event of a store pod deleted at once.
const EtcdForceDeletedReason = "PaddleEtcdForceDeleted"

// unblockStore deletes at once (grace period 0) the job's store pod when
// it has stayed terminating storeStuckAfter past its deadline: a pod on an
// unreachable node is never confirmed gone by its kubelet, and the store's
// fixed name would stay taken for good, the job without a store. The
// store holds nothing worth more than the job's progress: its launchers
// there cannot reach the others either, and a new store starts empty.
func (c *Controller) unblockStore(job *batch.Job) {
	pod, err := c.pods.Pods(job.Namespace).Get(paddlejob.EtcdName(job.Name))
	if err != nil || !metav1.IsControlledBy(pod, job) || pod.DeletionTimestamp == nil || c.now().Sub(pod.DeletionTimestamp.Time) < storeStuckAfter {
		return
	}
	zero, uid := int64(0), pod.UID
	err = c.Kube.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		klog.ErrorS(err, "Deleting a stuck store pod of an elastic Paddle job", "job", klog.KObj(job), "pod", klog.KObj(pod))
		return
	}
	stuck := c.now().Sub(pod.DeletionTimestamp.Time).Round(time.Second)
	klog.InfoS("Deleted a store pod stuck terminating", "job", klog.KObj(job), "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "pastDeadline", stuck)
	c.Recorder.Eventf(job, v1.EventTypeWarning, EtcdForceDeletedReason, "the job's store pod %s stayed terminating %s past its deadline (its node %s may be unreachable); deleted it at once so that a new store can take its name",
		pod.Name, stuck, pod.Spec.NodeName)
}

// hasTrainerPods: a trainer pod of the job exists (Volcano creates them
// once the job has left its queue), so its store must run.
func (c *Controller) hasTrainerPods(job *batch.Job) bool {
	pods, err := c.pods.Pods(job.Namespace).List(labels.SelectorFromSet(labels.Set{batch.JobNameKey: job.Name, paddleapi.ElasticLabel: "true"}))
	return err == nil && len(pods) > 0
}

// storeIntact: the caches show the job's store as paddlejob builds it
// (its Service selector-less, its NetworkPolicy's spec, its
// EndpointSlice's endpoints from the store pod, the pod when withPod),
// all controlled by the job, so that the periodic check makes no API call
// (at 500 elastic jobs every 30 s it made about 3,000: the controller
// manager's whole 50 QPS).
func (c *Controller) storeIntact(job *batch.Job, s paddlejob.Spec, withPod bool) bool {
	name := paddlejob.EtcdName(job.Name)
	svc, err := c.services.Services(job.Namespace).Get(name)
	if err != nil || !metav1.IsControlledBy(svc, job) || len(svc.Spec.Selector) != 0 || svc.Spec.ClusterIP != v1.ClusterIPNone {
		return false
	}
	np, err := c.policies.NetworkPolicies(job.Namespace).Get(name)
	if err != nil || !metav1.IsControlledBy(np, job) {
		return false
	}
	l, err := c.layout(job, s)
	if err != nil || !equality.Semantic.DeepEqual(np.Spec, paddlejob.EtcdNetworkPolicy(job, l).Spec) {
		return false
	}
	var pod *v1.Pod
	if p, err := c.pods.Pods(job.Namespace).Get(name); err == nil && metav1.IsControlledBy(p, job) {
		pod = p
	} else if withPod {
		return false
	}
	slice, err := c.slices.EndpointSlices(job.Namespace).Get(name)
	if err != nil || !metav1.IsControlledBy(slice, job) {
		return false
	}
	want := paddlejob.EtcdEndpointSlice(job, pod)
	return slice.AddressType == want.AddressType && equality.Semantic.DeepEqual(slice.Endpoints, want.Endpoints) &&
		equality.Semantic.DeepEqual(slice.Ports, want.Ports)
}

// keeperRun is the BeatKeeper of a running elastic job.
type keeperRun struct {
	keeper *BeatKeeper
	url    string
	cancel context.CancelFunc
}

func (c *Controller) keeperOf(uid types.UID) *BeatKeeper {
	c.keepersMu.Lock()
	defer c.keepersMu.Unlock()
	if r := c.keepers[uid]; r != nil {
		return r.keeper
	}
	return nil
}

// syncKeepers runs a BeatKeeper for every running elastic job whose etcd
// is reachable, and stops the others.
func (c *Controller) syncKeepers() {
	jobs, err := c.Jobs.List(labels.Everything())
	if err != nil {
		return
	}
	want := map[types.UID]*batch.Job{}
	urls := map[types.UID]string{}
	exist := make(map[types.UID]bool, len(jobs))
	for _, job := range jobs {
		exist[job.UID] = true
	}
	c.forgetSpecs(exist)
	for _, job := range jobs {
		if job.DeletionTimestamp != nil || !paddlejob.Serves(job) {
			continue
		}
		if _, elastic := c.elasticSpec(job); !elastic {
			continue
		}
		switch job.Status.State.Phase {
		case batch.Running, batch.Pending, batch.Restarting:
		default:
			continue
		}
		u, err := c.etcdURL(job)
		if err != nil {
			continue
		}
		want[job.UID], urls[job.UID] = job, u
	}
	c.keepersMu.Lock()
	defer c.keepersMu.Unlock()
	for uid, r := range c.keepers {
		if urls[uid] != r.url {
			r.cancel()
			delete(c.keepers, uid)
		}
	}
	for uid, job := range want {
		if c.keepers[uid] != nil {
			continue
		}
		ns, name := job.Namespace, job.Name
		k := &BeatKeeper{G: c.http(urls[uid]), JobID: paddlejob.JobID(job), Alive: func(ip string) string { return c.launcherAt(ns, name, ip) },
			Failed: func(at time.Time) { c.queue.Add(work{kind: paddleFailed, namespace: ns, job: name, at: at.UnixNano()}) }}
		ctx, cancel := context.WithCancel(context.Background())
		c.keepers[uid] = &keeperRun{keeper: k, url: urls[uid], cancel: cancel}
		go k.Run(ctx)
	}
}

func (c *Controller) stopKeepers() {
	c.keepersMu.Lock()
	defer c.keepersMu.Unlock()
	for uid, r := range c.keepers {
		r.cancel()
		delete(c.keepers, uid)
	}
}

// launcherAt is the incarnation of the launcher running at ip in a
// trainer pod of the job (its UID and restart count), or "" when none runs
// there: no such pod, the pod going, or its containers not all running (a
// launcher that exited and waits for the kubelet to restart it).
func (c *Controller) launcherAt(ns, job, ip string) string {
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromSet(labels.Set{batch.JobNameKey: job}))
	if err != nil {
		return ""
	}
	for _, p := range pods {
		if p.Status.PodIP != ip || p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil || len(p.Status.ContainerStatuses) == 0 {
			continue
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Running == nil {
				return ""
			}
		}
		return fmt.Sprintf("%s/%d", p.UID, restartCount(p))
	}
	return ""
}

// ipHolder names a pod of the job other than the one with UID uid that
// holds ip and has not ended, or "".
func (c *Controller) ipHolder(ns, job, ip string, uid types.UID) string {
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromSet(labels.Set{batch.JobNameKey: job}))
	if err != nil {
		return ""
	}
	for _, p := range pods {
		if p.UID != uid && p.Status.PodIP == ip && p.Status.Phase != v1.PodFailed && p.Status.Phase != v1.PodSucceeded {
			return p.Name
		}
	}
	return ""
}

// restartCount is the sum of the restarts of the pod's containers.
func restartCount(pod *v1.Pod) int32 {
	var n int32
	for _, s := range pod.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// syncRestarted judges a launcher the kubelet restarted in place
// (restartPolicy OnFailure): a crash counts toward --elastic-max-failures
// like a crashed pod's, and fails the job beyond it; an exit when the
// job's store could not serve, Paddle stopping its processes (241) and
// SIGTERM do not count. The other launchers re-form their world with it:
// it registers anew when it starts (controllers/master.py:
// ETCDMaster.register_heartbeat).
func (c *Controller) syncRestarted(ctx context.Context, w work) error {
	pod, job, s, ok := c.trainerOf(w)
	if !ok {
		return nil
	}
	for _, st := range pod.Status.ContainerStatuses {
		t := st.LastTerminationState.Terminated
		if t == nil {
			continue
		}
		switch t.ExitCode {
		case 0, paddleapi.ExitStopped, exitTerminated, paddleapi.ExitSignalled:
			continue
		}
		exit := fmt.Sprintf("container %s exit code %d %s", st.Name, t.ExitCode, t.Reason)
		if f, ok := c.storeFaultAt(job, pod.CreationTimestamp.Time, t.FinishedAt.Time); ok {
			klog.InfoS("A launcher of an elastic Paddle job exited when its store could not serve; not counted", "job", klog.KObj(job), "pod", klog.KObj(pod), "exit", exit, "store", f.why)
			continue
		}
		n, _ := strconv.Atoi(job.Annotations[FailuresAnnotation])
		if n >= s.Args.Elastic.MaxFailures {
			return c.fail(ctx, job, "pod "+pod.Name, exit, n)
		}
		if err := c.countFailure(ctx, job, n+1); err != nil {
			return err
		}
		klog.InfoS("A launcher of an elastic Paddle job crashed and restarted in place", "job", klog.KObj(job), "pod", klog.KObj(pod), "exit", exit, "failures", n+1)
		c.Recorder.Eventf(job, v1.EventTypeNormal, ReplacedReason, "the launcher of pod %s crashed (%s) and restarted in place; failure %d of the %d --elastic-max-failures allows; the other pods re-form their world with it",
			pod.Name, exit, n+1, s.Args.Elastic.MaxFailures)
	}
	return nil
}
