// Command local-cluster runs the local Kubernetes + Volcano cluster used by
// `make up`, `make down` and `make demo`. It is a developer tool: clusters
// for real users are installed from deploy/.
//
//	local-cluster up [--topology FILE] [--scheduler-conf FILE]
//	                                     start in the background; kubeconfig in .local/kubeconfig
//	local-cluster down                   stop it and remove its state
//	local-cluster status                 say whether it runs
//	local-cluster demo [--keep]          start a cluster, run the examples, print a summary
package main

import (
	"flag"
	"fmt"
	"os"
)

func usage() {
	fmt.Fprint(os.Stderr, `usage: local-cluster <command> [flags]

commands:
  up      start the local cluster in the background (kubeconfig: .local/kubeconfig)
  down    stop the local cluster started by up
  status  report whether the local cluster runs
  demo    run the deploy/examples jobs on a local cluster and print where they went
  serve   run the cluster in the foreground (what up starts)
`)
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "up":
		err = runUp(args)
	case "down":
		err = runDown(args)
	case "status":
		err = runStatus(args)
	case "serve":
		err = runServe(args)
	case "demo":
		err = runDemo(args)
	case "-h", "--help", "help":
		usage()
		return
	default:
		usage()
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		if err == flag.ErrHelp {
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "local-cluster %s: %v\n", cmd, err)
		os.Exit(1)
	}
}
