package main

import (
	"context"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/jobsize"
)

// jobSizeTrainers are the PS job sizes issue 11 asks about; the same in
// quick and full mode.
const jobSizeTrainers = "100,2000,10000"

// runJobSize measures one Paddle job of each size on its own cluster and
// writes its section into the report (bench/jobsize).
func runJobSize(ctx context.Context, out string) error {
	logf("job size benchmark: PS jobs of %s trainers", jobSizeTrainers)
	rs, err := jobsize.Run(ctx, jobsize.Options{Trainers: []int{100, 2000, 10000}, Logf: logf, Timeout: 20 * time.Minute})
	if err != nil {
		return err
	}
	return jobsize.WriteSection(out, jobsize.Markdown(rs, "go run ./bench/jobsize/cmd -trainers "+jobSizeTrainers+" (also part of make bench)"))
}
