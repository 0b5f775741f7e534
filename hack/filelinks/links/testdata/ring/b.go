package ring

func b() int { return c() }
