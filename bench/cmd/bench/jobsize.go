package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/jobsize"
)

// runJobSize measures one Paddle job of each of the plan's sizes on its own
// cluster and writes its section into the report (bench/jobsize). Quick mode
// leaves out the 10,000-trainer job: on 2 cores Volcano's scheduler alone
// takes 10-25 minutes to bind its 10,020-pod gang, more than quick mode's
// whole budget; full mode and `go run ./bench/jobsize/cmd` measure it.
func runJobSize(ctx context.Context, out string, trainers []int) error {
	list := make([]string, len(trainers))
	for i, n := range trainers {
		list[i] = strconv.Itoa(n)
	}
	sizes := strings.Join(list, ",")
	logf("job size benchmark: PS jobs of %s trainers", sizes)
	rs, err := jobsize.Run(ctx, jobsize.Options{Trainers: trainers, Logf: logf, Timeout: 20 * time.Minute})
	if err != nil {
		return err
	}
	return jobsize.WriteSection(out, jobsize.Markdown(rs, "go run ./bench/jobsize/cmd -trainers "+sizes))
}
