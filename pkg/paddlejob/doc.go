// Package paddlejob is what a PaddlePaddle job is, for a Volcano Job with
// `plugins: {paddle: [...]}`: pure functions of the Job, its plugin
// arguments and its incarnation (the Volcano job version its pods belong
// to). It makes no API call and registers nothing: the paddle job plugin
// (pkg/controllers/job/plugins/paddle) adapts it to Volcano's hooks,
// pkg/paddlekube creates and deletes the objects it builds, and the
// admission webhook, the paddleobjects and paddleelastic controllers, the
// benchmarks and the end-to-end tests read jobs through it.
//
// The files form layers, each using only those below it
// (hack/filelinks TestPaddlejobIsLayered):
//
//   - names.go: names, labels, keys and the variables Paddle reads;
//   - args.go: the plugin arguments and their defaults; job.go: Spec, the
//     arguments parsed once (Read);
//   - layout.go: the layout: roles, mode, host names per incarnation,
//     ports, the elastic bounds (which elastic.go resolves);
//   - entrypoints.go: the entry points (how a container starts Paddle) and
//     the variables each reads; elasticenv.go: the elastic launcher as one
//     more source, and what elastic pods get of every variable;
//     env.go: a pod's env and the shared lists, rendered from both;
//   - limits.go, elastic.go, validation.go: ValidateJob, which builds the
//     layout completely, then validates it, then decides the lists the
//     pods are rendered with; then warnings.go,
//     defaults.go (the mutating admission's defaults), update.go (what may
//     change while a job exists);
//   - objects.go, store.go: the Service, the ConfigMap of an incarnation's
//     lists and an elastic job's etcd; barrier.go, preemption.go, pod.go:
//     DecoratePod, what a pod of the job gets.
//
// pkg/paddleapi is its neighbour below: the names both the job plugin and
// the scheduler plugin read (roles and their task names, pod labels, DNS
// names and incarnation suffixes, the node GPU-topology annotation). What
// the scheduler plugin needs to recognise a Paddle pod belongs there; what
// only the job side decides (arguments, env, validation, the objects a job
// owns) belongs here.
package paddlejob
