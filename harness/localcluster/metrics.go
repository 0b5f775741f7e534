package localcluster

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SchedulerMetricsURL is where the scheduler serves Prometheus metrics.
func (c *Cluster) SchedulerMetricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", c.ports["sched-metrics"])
}

// ScrapeMetric returns the sum of all samples of one metric (every label
// combination) at url; 0 when the metric is absent.
func ScrapeMetric(ctx context.Context, url, name string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // a longer metric name sharing the prefix
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		sum += v
	}
	return sum, sc.Err()
}

// SchedulerSessions is how many scheduling sessions the scheduler has run;
// tests wait for it to advance to know the scheduler has looked at the
// cluster since a change, instead of sleeping.
func (c *Cluster) SchedulerSessions(ctx context.Context) (int, error) {
	v, err := ScrapeMetric(ctx, c.SchedulerMetricsURL(), "volcano_e2e_scheduling_latency_milliseconds_count")
	return int(v), err
}

// WaitSchedulerSessions waits until the scheduler has run n more sessions.
func (c *Cluster) WaitSchedulerSessions(ctx context.Context, n int, timeout time.Duration) error {
	start := -1
	if err := c.poll(ctx, "the scheduler's metrics", timeout, func(ctx context.Context) (bool, error) {
		v, err := c.SchedulerSessions(ctx)
		start = v
		return err == nil, err
	}); err != nil {
		return err
	}
	return c.poll(ctx, fmt.Sprintf("%d scheduling sessions", n), timeout, func(ctx context.Context) (bool, error) {
		now, err := c.SchedulerSessions(ctx)
		return err == nil && now >= start+n, err
	})
}
