package paddlejob

import "github.com/volcano-paddle/volcano-paddle/harness/testbuilders"

// The job builders this package's tests share with the job plugin's.
var (
	newJob     = testbuilders.PaddleJob
	elasticJob = testbuilders.ElasticPaddleJob
)
