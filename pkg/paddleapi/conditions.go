package paddleapi

// HeldCondition is the PodGroup condition the paddle scheduler plugin sets
// while it keeps a gang from starting although the gang fits (a hold for
// smaller jobs, or GPUs reserved for a starving gang): status True with a
// reason and a message that says until when, False once it no longer does.
// The type is prefixed, as Kubernetes asks of conditions an extension adds
// to an object it does not own (pod readiness gates do the same), so that
// it never collides with Volcano's own Unschedulable and Scheduled, which
// Volcano's gang plugin rewrites every session.
const HeldCondition = "paddle.volcano.sh/Held"
