package ring

// A uses b.go, which uses c.go, which uses a.go: one cycle of three files.
func A() int { return b() + 1 }
