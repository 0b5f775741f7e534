package replay

import (
	"math"
	"testing"
)

// paired is a window's figure per configuration and seed: names starting
// "stock" are stock, others paddle.
func paired(window string, values map[string][]float64) Paired {
	p := Paired{Window: window, Values: values, Roles: map[string]Role{}}
	for c, vs := range values {
		p.Roles[c] = RolePaddle
		if len(c) >= 5 && c[:5] == "stock" {
			p.Roles[c] = RoleStock
		}
		p.Seeds = make([]int64, len(vs))
	}
	return p
}

// withBounds is ps with window k's lower bound bounds[k].
func withBounds(ps []Paired, bounds ...float64) []Paired {
	out := make([]Paired, len(ps))
	for k, p := range ps {
		p.Bound = bounds[k]
		out[k] = p
	}
	return out
}

func TestWindowRatio(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name    string
		values  map[string][]float64
		point   float64
		verdict string
	}{
		{"better in every seed", map[string][]float64{
			"stock": {10, 12, 11, 9, 10}, "stock-b": {11, 13, 12, 10, 11}, "paddle": {9, 10.8, 9.9, 8.1, 9}}, 0.9, "better"},
		{"worse in every seed", map[string][]float64{
			"stock": {10, 12, 11, 9, 10}, "paddle": {11, 13.2, 12.1, 9.9, 11}}, 1.1, "worse"},
		{"as often better as worse", map[string][]float64{
			"stock": {10, 10, 10, 10, 10}, "paddle": {8, 12, 9, 11, 10}}, 1, "tie"},
		// The best stock configuration differs by seed; per window it is the
		// one with the best mean (stock-b), not a per-seed minimum.
		{"best chosen on the mean", map[string][]float64{
			"stock": {8, 14, 8, 14, 8}, "stock-b": {10, 10, 10, 10, 10}, "paddle": {10, 10, 10, 10, 10}}, 1, "tie"},
		{"a job never started is a loss", map[string][]float64{
			"stock": {10, 10, 10, 10, 10}, "paddle": {5, 5, inf, 5, 5}}, inf, "worse"},
		// A stock configuration that left a job waiting under one seed is not
		// the best on all seeds, but is in resamples without that seed.
		{"stock configurations that never start a job are not the best", map[string][]float64{
			"stock": {10, 10, inf, 10, 10}, "stock-b": {12, 12, 12, 12, 12}, "paddle": {11, 11, 11, 11, 11}}, 11.0 / 12, "tie"},
	}
	for _, c := range cases {
		iv := WindowRatio(paired(c.name, c.values), "paddle")
		if math.Abs(iv.Point-c.point) > 1e-9 && !(math.IsInf(c.point, 1) && math.IsInf(iv.Point, 1)) {
			t.Errorf("%s: ratio %v, want %g", c.name, iv, c.point)
		}
		if iv.Lo > iv.Point || iv.Hi < iv.Point {
			t.Errorf("%s: interval %v does not hold its point", c.name, iv)
		}
		if v := iv.Verdict(); v != c.verdict {
			t.Errorf("%s: %v is %q, want %q", c.name, iv, v, c.verdict)
		}
	}
}

// Two stock configurations each best on half the windows: against the
// best per window paddle ties, against the best single configuration
// (the one with the lower geometric mean) it is better.
func TestGeoMeanRatio(t *testing.T) {
	var ps []Paired
	for k := 0; k < 8; k++ {
		a, b := []float64{10, 10.2, 9.8}, []float64{12, 12.2, 11.8}
		if k%2 == 1 {
			a, b = b, a
			a = []float64{13, 13.2, 12.8} // stock-a is worse overall
		}
		ps = append(ps, paired("w", map[string][]float64{"stock-a": a, "stock-b": b, "paddle": {10, 10.2, 9.8}}))
	}
	oracle, _, skipped := GeoMeanRatio(ps, "paddle", AgainstBestPerWindow)
	if math.Abs(oracle.Point-1) > 1e-9 || oracle.Verdict() != "tie" || skipped != 0 {
		t.Errorf("against the best per window: %v (%s), %d skipped; want 1, a tie", oracle, oracle.Verdict(), skipped)
	}
	single, name, _ := GeoMeanRatio(ps, "paddle", AgainstBestSingle)
	if name != "stock-b" {
		t.Errorf("best single %q, want stock-b (geometric means: a %g, b %g)", name, math.Sqrt(10*13), math.Sqrt(12*10))
	}
	if want := math.Sqrt(10.0 / 12); math.Abs(single.Point-want) > 1e-9 || single.Verdict() != "better" {
		t.Errorf("against the best single: %v (%s), want %g, better", single, single.Verdict(), want)
	}
	if BestSingle(ps) != "stock-b" {
		t.Errorf("BestSingle %q", BestSingle(ps))
	}
	// A window where every stock configuration left a job waiting has no
	// baseline: left out, and said.
	inf := math.Inf(1)
	ps = append(ps, paired("w", map[string][]float64{"stock-a": {inf, 1, 1}, "stock-b": {1, inf, 1}, "paddle": {1, 1, 1}}))
	if _, _, skipped := GeoMeanRatio(ps, "paddle", AgainstBestPerWindow); skipped != 1 {
		t.Errorf("skipped %d windows, want 1", skipped)
	}
	// A configuration no window replayed (the reference in a report saved
	// before it existed) has no ratio, and nothing fails.
	if none, _, _ := GeoMeanRatio(ps, Clairvoyant, AgainstBestSingle); !math.IsNaN(none.Point) {
		t.Errorf("a configuration never replayed: %v, want NaN", none)
	}
}

// PairedOf reads a report's seeds, scores a seed with a job never started
// +Inf, leaves the bound out and refuses a report without seeds.
func TestPairedOf(t *testing.T) {
	m := func(c string, role Role, mean float64, started int) Metrics {
		return Metrics{Config: c, Role: role, Jobs: 3, Started: started, MeanJCT: mean}
	}
	rep := &Report{PerSeed: []SeedResult{
		{Seed: 1, Metrics: []Metrics{m("stock", RoleStock, 10, 3), m("paddle", RolePaddle, 9, 3), m(LowerBound, RoleBound, 5, 3)}},
		{Seed: 2, Metrics: []Metrics{m("stock", RoleStock, 11, 3), m("paddle", RolePaddle, 8, 2), m(LowerBound, RoleBound, 5, 3)}},
	}}
	p, err := PairedOf(rep, MeanJCTFigure)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Values["paddle"]; got[0] != 9 || !math.IsInf(got[1], 1) {
		t.Errorf("paddle %v, want [9 +Inf]", got)
	}
	if _, ok := p.Values[LowerBound]; ok || p.Roles["stock"] != RoleStock || len(p.Seeds) != 2 {
		t.Errorf("paired %+v", p)
	}
	if _, err := PairedOf(&Report{}, MeanJCTFigure); err == nil {
		t.Error("a report without seeds gave no error")
	}
}

// The bound's ratio is the geometric mean over windows of bound / the
// configuration's mean over seeds; none where no window has the
// configuration.
func TestBoundRatio(t *testing.T) {
	ps := withBounds([]Paired{paired("a", map[string][]float64{"stock": {8, 12}}), paired("b", map[string][]float64{"stock": {40, 40}})}, 5, 10)
	if got, want := BoundRatio(ps, "stock"), math.Sqrt(0.5*0.25); math.Abs(got-want) > 1e-12 {
		t.Errorf("bound ratio %g, want %g", got, want)
	}
	if got := BoundRatio(ps, "paddle"); !math.IsNaN(got) {
		t.Errorf("bound ratio of an absent configuration %g, want NaN", got)
	}
}

// A variant 10% faster than paddle on every window and seed is 0.9 of it,
// whatever the stock configurations did; a window without the variant is
// left out.
func TestGeoMeanRatioTo(t *testing.T) {
	w := func(name string, paddle, variant []float64) Paired {
		p := Paired{Window: name, Seeds: []int64{1, 2, 3}, Values: map[string][]float64{Paddle: paddle, "stock": {1, 1, 1}},
			Roles: map[string]Role{Paddle: RolePaddle, "stock": RoleStock}}
		if variant != nil {
			p.Values["v"], p.Roles["v"] = variant, RolePaddle
		}
		return p
	}
	ps := []Paired{w("a", []float64{10, 20, 30}, []float64{9, 18, 27}), w("b", []float64{5, 5, 5}, []float64{4.5, 4.5, 4.5}), w("c", []float64{1, 1, 1}, nil)}
	iv := GeoMeanRatioTo(ps, "v", Paddle)
	if math.Abs(iv.Point-0.9) > 1e-9 || math.Abs(iv.Lo-0.9) > 1e-9 || math.Abs(iv.Hi-0.9) > 1e-9 || iv.Verdict() != "better" {
		t.Errorf("%+v %s", iv, iv.Verdict())
	}
	if iv := GeoMeanRatioTo(ps, "missing", Paddle); !math.IsNaN(iv.Point) {
		t.Errorf("a configuration no window has: %+v", iv)
	}
}

// PoolRuns pools each configuration over windows and seeds: the large
// jobs' waits (their p99, nearest rank), the free GPU-hours summed, the
// jobs never started; the bound is left out; a report without waits
// (saved before they were kept) gives no p99.
func TestPoolRuns(t *testing.T) {
	seed := func(s int64, ms ...Metrics) SeedResult { return SeedResult{Seed: s, Metrics: ms} }
	waits := func(n int, from float64) []float64 {
		var w []float64
		for k := 0; k < n; k++ {
			w = append(w, from+float64(k))
		}
		return w
	}
	a := &Report{PerSeed: []SeedResult{
		seed(1, Metrics{Config: "stock", Role: RoleStock, Jobs: 3, Started: 3, FreeGPUHoursWaiting: 1, LargeWaits: waits(50, 0)},
			Metrics{Config: "paddle", Role: RolePaddle, Jobs: 3, Started: 2, FreeGPUHoursWaiting: 10},
			Metrics{Config: LowerBound, Role: RoleBound, Jobs: 3, Started: 3}),
		seed(2, Metrics{Config: "stock", Role: RoleStock, Jobs: 3, Started: 3, FreeGPUHoursWaiting: 2, LargeWaits: waits(50, 1000)},
			Metrics{Config: "paddle", Role: RolePaddle, Jobs: 3, Started: 3, FreeGPUHoursWaiting: 20})}}
	got := PoolRuns([]*Report{a})
	if len(got) != 2 || got[0].Config != "stock" || got[1].Config != "paddle" {
		t.Fatalf("pooled %+v, want stock and paddle", got)
	}
	// 100 waits: 0..49 and 1000..1049; the 99th is 1048.
	if s := got[0]; s.LargeGangs != 100 || s.P99LargeWait != 1048 || s.FreeGPUHoursWaiting != 3 || s.Runs != 2 || s.Unstarted != 0 {
		t.Errorf("stock %+v", s)
	}
	if p := got[1]; p.LargeGangs != 0 || !math.IsNaN(p.P99LargeWait) || p.FreeGPUHoursWaiting != 30 || p.Unstarted != 1 {
		t.Errorf("paddle %+v", p)
	}
}

// The target is f of the baseline where the bound leaves room, halfway to
// the bound where it does not, never above the baseline; a window without
// a bound is left out. The best single stock configuration is chosen as
// for GeoMeanRatio, and the target taken below it.
func TestGeoMeanRatioToTarget(t *testing.T) {
	// Window a: S 10, L 9.8: (S+L)/2 = 9.9 > 0.95 S, so T = 9.9.
	// Window b: S 10, L 0: T = 0.95 S = 9.5.
	// Window c: a bound above the baseline cannot lift T above S.
	ps := []Paired{
		paired("a", map[string][]float64{"stock": {10, 10}, "stock-b": {11, 11}, "paddle": {9.9, 9.9}}),
		paired("b", map[string][]float64{"stock": {10, 10}, "stock-b": {12, 12}, "paddle": {10, 10}}),
		paired("c", map[string][]float64{"stock": {10, 10}, "stock-b": {9, 9}, "paddle": {9, 9}}),
	}
	bounds := []float64{9.8, 0, 20}
	cases := []struct {
		name    string
		against Against
		target  Target
		bounds  []float64
		point   float64
		single  string
	}{
		{"per window", AgainstBestPerWindow, Target{Shrink: 0.95}, bounds, math.Cbrt(1 * (10 / 9.5) * 1), ""},
		// stock: geometric mean 10 against stock-b's (11*12*9)^(1/3) = 10.58.
		{"best single", AgainstBestSingle, Target{Shrink: 0.95}, bounds, math.Cbrt(1 * (10 / 9.5) * 0.9), "stock"},
		{"shrink 1 is the baseline", AgainstBestPerWindow, Target{Shrink: 1}, bounds, math.Cbrt(0.99 * 1 * 1), ""},
		{"a window without a bound is left out", AgainstBestPerWindow, Target{Shrink: 0.95}, []float64{9.8, math.NaN(), 20}, 1, ""},
	}
	for _, c := range cases {
		iv, single := GeoMeanRatioToTarget(withBounds(ps, c.bounds...), "paddle", c.against, c.target)
		if math.Abs(iv.Point-c.point) > 1e-9 {
			t.Errorf("%s: %v, want %g", c.name, iv, c.point)
		}
		if single != c.single {
			t.Errorf("%s: best single %q, want %q", c.name, single, c.single)
		}
		if iv.Lo > iv.Point || iv.Hi < iv.Point {
			t.Errorf("%s: interval %v does not hold its point", c.name, iv)
		}
	}
	if plain, _, _ := GeoMeanRatio(ps, "paddle", AgainstBestPerWindow); math.Abs(plain.Point-math.Cbrt(0.99*1*1)) > 1e-9 {
		t.Errorf("GeoMeanRatio %v changed", plain)
	}
}
