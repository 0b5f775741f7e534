// Package paddleapi holds what the paddle job plugin and the paddle scheduler
// plugin must agree on: role names, pod labels, DNS names and the node
// GPU-topology annotation. Both plugins import it, so the job plugin's naming
// and the scheduler plugin's role detection cannot drift apart.
package paddleapi
