package paddleapi

// Exit codes of Paddle's elastic launcher (python -m
// paddle.distributed.launch, v2.6.2 and v3.0.0-beta2) that are not a
// crash: what paddle-elastic-controller must not count, and what
// paddle-probe, its double, gives.
const (
	// ExitStopped: the launcher stopped its processes and exited with
	// their -15 (sys.exit(-15) is 241): it gave up waiting for MIN peers
	// after it had trained, or reached PADDLE_MAX_RESTART through
	// membership changes (controllers/controller.py: finalize).
	ExitStopped = 241
	// ExitSignalled: the launcher on SIGTERM, sys.exit(signum)
	// (controllers/controller.py: signal_handler).
	ExitSignalled = 15
)
