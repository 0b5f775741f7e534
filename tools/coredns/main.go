// Command coredns is CoreDNS with only the plugins the real node of the local
// cluster uses, built the way CoreDNS's own main (coredns.go) is: blank
// imports register the plugins, and they run in the order of CoreDNS's
// plugin.cfg (core/dnsserver/zdirectives.go: Directives), whatever order a
// Corefile names them in. A Corefile may name only these plugins.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
