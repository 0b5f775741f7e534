package localcluster

import (
	"fmt"
	"net"
)

// freePorts reserves n distinct loopback ports by binding them all at once and
// releasing them together, so no two components are handed the same port.
// Another program could still take one in between; start-up then fails with
// the component's log pointing at the bind error rather than hanging.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserving a loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
