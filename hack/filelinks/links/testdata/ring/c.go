package ring

func c() int { return limit }

const limit = 2

// D is used by nobody in the package.
type D struct{}

// Twice uses a.go and d.go, which uses nothing: layered above the ring.
func (D) Twice() int { return 2 * A() }
