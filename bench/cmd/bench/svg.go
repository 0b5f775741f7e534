package main

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
