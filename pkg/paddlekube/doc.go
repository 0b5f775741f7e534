// Package paddlekube makes the API calls for a Paddle job that both the
// paddle job plugin (pkg/controllers/job/plugins/paddle) and the
// controllers (pkg/controllers/paddleobjects, paddleelastic) make: it
// creates, repairs and deletes the objects pkg/paddlejob builds for a job
// (its headless Service, the ConfigMap of an incarnation's lists, an
// elastic job's etcd). What those objects hold is decided in pkg/paddlejob;
// here is only how they reach the API server, idempotently and without
// touching objects the job does not own.
package paddlekube
