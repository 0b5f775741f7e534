package paddleapi

// RunTimeHistoryAnnotation on a Volcano Queue holds the run times of the
// queue's finished jobs, by what was known of them at submission, as the
// controller manager's paddle-history-controller records them
// (pkg/jobhistory: QueueHistory) and the scheduler plugin reads them to
// predict the run time of waiting jobs. Its content is that package's
// concern; it is bounded (jobhistory.MaxQueueKeys).
const RunTimeHistoryAnnotation = "paddle.volcano.sh/run-time-history"
