// Package deploy holds the scheduler configurations operators install,
// compiled into the binaries that replay them away from this repository
// (cmd/paddle-replay run): deploy/stock's is Volcano's Helm default
// (harness/localcluster's deploy test keeps it so), deploy/paddle's is
// stock with paddle added.
package deploy

import _ "embed"

//go:embed stock/volcano-scheduler.conf
var stockSchedulerConf []byte

//go:embed paddle/volcano-scheduler.conf
var paddleSchedulerConf []byte

// StockSchedulerConf is deploy/stock/volcano-scheduler.conf: Volcano's
// Helm chart default tiers.
func StockSchedulerConf() []byte { return append([]byte(nil), stockSchedulerConf...) }

// PaddleSchedulerConf is deploy/paddle/volcano-scheduler.conf.
func PaddleSchedulerConf() []byte { return append([]byte(nil), paddleSchedulerConf...) }
