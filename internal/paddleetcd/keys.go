package paddleetcd

// The keys Paddle's elastic launcher keeps in its job's etcd
// (python/paddle/distributed/launch/ of Paddle v2.6.2 and v3.0.0-beta2):
//
//   - /paddle/<job_id>/heartbeat/<pod name>: one per live launcher, bound
//     to a 10 s lease it refreshes every 5 s; value the pod name
//     (controllers/master.py: ETCDMaster.register_heartbeat). Any change
//     under the prefix restarts every launcher's rendezvous (its
//     _beat_watch callback).
//   - /<job_id>/info/<pod name>/<rank>: the rendezvous record of each
//     launcher of the current world, JSON with "name" (the pod name) and
//     "candidate" (POD_IP:port) (controllers/collective.py:
//     _build_pod_with_master, through ETCDMaster.sync_peers).
//   - /paddle/<job_id>: the job's status; "completed" once training ended,
//     set before the launchers exit 0 (controllers/controller.py: watch,
//     ETCDMaster.set_status).
//
// The pod name is Paddle's own random name (job/pod.py), not the
// Kubernetes pod's: the record's candidate ties it to the pod's IP.

// HeartbeatPrefix is where the heartbeats of a job's launchers are.
func HeartbeatPrefix(jobID string) string { return "/paddle/" + jobID + "/heartbeat/" }

// HeartbeatKey is the heartbeat key of the launcher named name.
func HeartbeatKey(jobID, name string) string { return HeartbeatPrefix(jobID) + name }

// InfoPrefix is where the rendezvous records of a job's launchers are.
func InfoPrefix(jobID string) string { return "/" + jobID + "/info/" }

// StatusKey holds the job's status.
func StatusKey(jobID string) string { return "/paddle/" + jobID }
