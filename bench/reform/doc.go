// Package reform measures how fast an elastic Paddle job forms its next
// world after a pod is deleted, a replacement joins, or a node is lost,
// with and without paddle-elastic-controller's help (BenchmarkReform).
package reform
