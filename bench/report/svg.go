package report

import (
	"fmt"
	"math"
	"strings"
)

// A small SVG bar chart: groups of bars (one per series) with a value
// label on each bar. Enough for the benchmark report; no dependencies.
type barChart struct {
	Title  string
	YLabel string
	Groups []string
	Series []string
	Values [][]float64 // [group][series]
	Format string      // value label format, e.g. "%.2f"
}

var palette = []string{"#7f7f7f", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

func (c barChart) SVG() string {
	const w, h, left, bottom, top = 760, 360, 60, 70, 40
	maxV := 0.0
	for _, g := range c.Values {
		for _, v := range g {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				maxV = math.Max(maxV, v)
			}
		}
	}
	if maxV == 0 {
		maxV = 1
	}
	plotW, plotH := float64(w-left-20), float64(h-top-bottom)
	groupW := plotW / float64(max(1, len(c.Groups)))
	barW := groupW * 0.8 / float64(max(1, len(c.Series)))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left, esc(c.Title))
	fmt.Fprintf(&b, `<text x="14" y="%d" transform="rotate(-90 14 %d)">%s</text>`+"\n", top+int(plotH/2), top+int(plotH/2), esc(c.YLabel))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, top+int(plotH))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top+int(plotH), w-20, top+int(plotH))
	for i := 0; i <= 4; i++ {
		v := maxV * float64(i) / 4
		y := float64(top) + plotH - plotH*float64(i)/4
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%s</text>`+"\n", left-4, y+4, trimNum(v))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#ddd"/>`+"\n", left, y, w-20, y)
	}
	for gi, g := range c.Groups {
		gx := float64(left) + groupW*float64(gi) + groupW*0.1
		for si := range c.Series {
			v := c.Values[gi][si]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			bh := plotH * v / maxV
			x := gx + barW*float64(si)
			y := float64(top) + plotH - bh
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, y, barW-2, bh, palette[si%len(palette)])
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="9">%s</text>`+"\n", x+barW/2, y-3, fmt.Sprintf(c.Format, v))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", gx+groupW*0.4, top+int(plotH)+16, esc(g))
	}
	for si, s := range c.Series {
		x := left + si*150
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", x, h-22, palette[si%len(palette)], x+16, h-12, esc(s))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func trimNum(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// lineSeries is one line of a lineChart.
type lineSeries struct {
	Name string
	X, Y []float64
}

// A small SVG line chart (CDFs, time series), optionally with a log10 x
// axis.
type lineChart struct {
	Title, XLabel, YLabel string
	LogX                  bool
	Series                []lineSeries
}

func (c lineChart) SVG() string {
	const w, h, left, bottom, top, right = 760, 380, 60, 80, 40, 20
	fx := func(x float64) float64 {
		if c.LogX {
			return math.Log10(x)
		}
		return x
	}
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range c.Series {
		for i := range s.X {
			minX, maxX = math.Min(minX, fx(s.X[i])), math.Max(maxX, fx(s.X[i]))
			maxY = math.Max(maxY, s.Y[i])
		}
	}
	if math.IsInf(minX, 0) || maxX <= minX {
		minX, maxX = 0, 1
	}
	if !c.LogX {
		minX = math.Min(minX, 0)
	}
	if maxY == 0 {
		maxY = 1
	}
	plotW, plotH := float64(w-left-right), float64(h-top-bottom)
	px := func(x float64) float64 { return float64(left) + plotW*(fx(x)-minX)/(maxX-minX) }
	py := func(y float64) float64 { return float64(top) + plotH - plotH*y/maxY }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left, esc(c.Title))
	fmt.Fprintf(&b, `<text x="14" y="%d" transform="rotate(-90 14 %d)">%s</text>`+"\n", top+int(plotH/2), top+int(plotH/2), esc(c.YLabel))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", left+int(plotW/2), top+int(plotH)+34, esc(c.XLabel))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, top+int(plotH))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top+int(plotH), w-right, top+int(plotH))
	for i := 0; i <= 4; i++ {
		v := maxY * float64(i) / 4
		y := py(v)
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%s</text>`+"\n", left-4, y+4, trimNum(v))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#ddd"/>`+"\n", left, y, w-right, y)
	}
	for i := 0; i <= 5; i++ {
		v := minX + (maxX-minX)*float64(i)/5
		label := v
		if c.LogX {
			label = math.Pow(10, v)
		}
		x := float64(left) + plotW*float64(i)/5
		fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%s</text>`+"\n", x, top+int(plotH)+16, trimNum(label))
	}
	for si, s := range c.Series {
		var pts []string
		for i := range s.X {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`+"\n", palette[si%len(palette)], strings.Join(pts, " "))
		x := left + si*170
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", x, h-22, palette[si%len(palette)], x+16, h-12, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
