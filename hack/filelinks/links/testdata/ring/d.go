package ring

// E uses a.go and c.go; nothing uses it.
func E() int { return A() + D{}.Twice() }
