// Command paddle-replay answers "would paddle finish my jobs sooner?" from
// a cluster's own history. Its subcommands:
//
//	paddle-replay export [--kubeconfig FILE] [--since DURATION] [--namespace NS] [-o FILE]
//	paddle-replay run --trace FILE --nodes PRESET:COUNT [--seeds N] [--window-jobs N] [--settings LIST]
//	paddle-replay predict --trace FILE [--last DURATION]
//	paddle-replay help [COMMAND]
//
// export writes the cluster's finished Volcano Jobs as a history CSV
// (pkg/jobhistory; docs/paddle-replay.md); run replays such a history under
// stock Volcano and paddle and says whether paddle is worth turning on. Each subcommand lives in its own
// file and is listed in commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	// run runs it with the arguments after its name. An error wrapping
	// errUsage exits 2 (the flags were wrong), any other 1.
	run func(args []string, stdout, stderr io.Writer) error
	// flags are its flags, for help (run parses its own).
	flags func() *flag.FlagSet
}

// commands are the subcommands, in the order help lists them.
var commands = []command{exportCommand, runCommand, predictCommand}

// errUsage marks an error in how the command was called.
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command line's exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := lookup(args[1]); ok {
				commandHelp(stdout, c)
				return 0
			}
			fmt.Fprintf(stderr, "paddle-replay: no command %q; commands: %s\n", args[1], names())
			return 2
		}
		usage(stdout)
		return 0
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "paddle-replay: no command %q; commands: %s (paddle-replay help)\n", name, names())
		return 2
	}
	err := c.run(args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "paddle-replay %s: %v\n", c.name, err)
		return 2
	default:
		fmt.Fprintf(stderr, "paddle-replay %s: %v\n", c.name, err)
		return 1
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func names() string {
	var n []string
	for _, c := range commands {
		n = append(n, c.name)
	}
	return strings.Join(append(n, "help"), ", ")
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "paddle-replay: would paddle finish your jobs sooner? Start from your cluster's history.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-8s %s\n", "help", "paddle-replay help COMMAND: a command's flags")
}

func commandHelp(w io.Writer, c command) {
	fmt.Fprintf(w, "paddle-replay %s: %s\n\nFlags:\n", c.name, c.summary)
	fs := c.flags()
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// usageError marks err as a usage error.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}
