package gputopology

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ansiEscape matches the terminal escape codes nvidia-smi writes around its
// topo -m header (underline on, off) even when its output is redirected.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

// gpuName matches a GPU row or column of topo -m (GPU0, GPU1, ...).
var gpuName = regexp.MustCompile(`^GPU(\d+)$`)

// Columns of topo -m that are not devices.
const (
	colCPUAffinity  = "CPU Affinity"
	colNUMAAffinity = "NUMA Affinity"
	colGPUNUMAID    = "GPU NUMA ID"
)

// switchedMeshMin: a full NVLink mesh of more GPUs than this is taken as
// NVSwitch when only the text of topo -m is known (it writes NV# for
// switched and direct links alike). No product links more than four GPUs
// directly all-to-all: HGX boards of 4 use direct links, those of 8 and 16
// NVSwitches. NVML tells them apart exactly (the agent's --nvml mode).
const switchedMeshMin = 4

// ParseTopoMatrix reads the output of `nvidia-smi topo -m`: the GPU rows
// (links to every GPU and NIC, CPU and NUMA affinity), the NIC legend of
// newer drivers (NIC0: mlx5_0), and derives islands and fabric from the
// links. NUMA comes from the NUMA Affinity column, or, for drivers that do
// not print it, from the CPU Affinity column (one NUMA node per distinct
// CPU set, in order of appearance). Each GPU's NIC is the NIC column with
// the nearest PCIe level (the first one among equals).
func ParseTopoMatrix(text string) (*Topology, error) {
	lines := strings.Split(ansiEscape.ReplaceAllString(strings.ReplaceAll(text, "\r", ""), ""), "\n")
	head := -1
	for i, l := range lines {
		for _, f := range strings.Split(l, "\t") {
			if strings.TrimSpace(f) == "GPU0" {
				head = i
				break
			}
		}
		if head >= 0 {
			break
		}
	}
	if head < 0 {
		return nil, fmt.Errorf("no topology matrix (a header with GPU0) in the nvidia-smi topo -m output")
	}
	cols := splitFields(lines[head])
	legend := nicLegend(lines[head+1:])
	type row struct {
		index  int
		fields []string
	}
	var rows []row
	for _, l := range lines[head+1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		f := splitFields(l)
		if m := gpuName.FindStringSubmatch(f[0]); m != nil {
			idx, _ := strconv.Atoi(m[1])
			rows = append(rows, row{idx, f})
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("the nvidia-smi topo -m matrix has no GPU rows")
	}
	if len(rows) > MaxGPUs {
		return nil, fmt.Errorf("%d GPUs, at most %d are supported", len(rows), MaxGPUs)
	}
	// Column positions of GPUs (by index), NICs, affinities.
	gpuCol := map[int]int{}
	var nicCols []int
	attr := map[string]int{}
	for c, name := range cols {
		switch {
		case c == 0 || name == "":
		case gpuName.MatchString(name):
			idx, _ := strconv.Atoi(name[3:])
			gpuCol[idx] = c
		case name == colCPUAffinity || name == colNUMAAffinity || name == colGPUNUMAID:
			attr[name] = c
		default:
			nicCols = append(nicCols, c)
		}
	}
	t := &Topology{}
	cpuSets := map[string]int{}
	cell := func(r row, c int) string {
		if c < len(r.fields) {
			return r.fields[c]
		}
		return ""
	}
	for _, r := range rows {
		g := GPU{Index: r.index, NUMA: -1}
		if c, ok := attr[colNUMAAffinity]; ok {
			g.NUMA = firstInt(cell(r, c))
		} else if c, ok := attr[colCPUAffinity]; ok {
			set := cell(r, c)
			if _, seen := cpuSets[set]; !seen && set != "" && set != "N/A" {
				cpuSets[set] = len(cpuSets)
			}
			if n, ok := cpuSets[set]; ok {
				g.NUMA = n
			}
		}
		for _, other := range rows {
			c, ok := gpuCol[other.index]
			if !ok {
				return nil, fmt.Errorf("GPU%d has a row but no column in the topo -m matrix", other.index)
			}
			l := strings.ToUpper(cell(r, c))
			if other.index == r.index {
				l = string(LevelSelf)
			} else if nvLinks(l) == 0 {
				lv, ok := parseLevel(l)
				if !ok {
					return nil, fmt.Errorf("GPU%d to GPU%d: unknown link %q in the topo -m matrix", r.index, other.index, cell(r, c))
				}
				l = string(lv)
			}
			g.Links = append(g.Links, l)
		}
		bestRank := 0
		for _, c := range nicCols {
			lv, ok := parseLevel(cell(r, c))
			if !ok {
				continue
			}
			if bestRank == 0 || levelRank[lv] < bestRank {
				bestRank = levelRank[lv]
				g.NIC = cols[c]
				if name, ok := legend[cols[c]]; ok {
					g.NIC = name
				}
			}
		}
		t.GPUs = append(t.GPUs, g)
	}
	nv := t.linkMatrix()
	return t.withIslands(fullMesh(nv) && len(nv) > switchedMeshMin)
}

// splitFields splits a matrix line at tabs and trims each field.
func splitFields(line string) []string {
	f := strings.Split(line, "\t")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	return f
}

// nicLegend reads "NIC Legend:" followed by "  NIC0: mlx5_0" lines.
func nicLegend(lines []string) map[string]string {
	out := map[string]string{}
	in := false
	for _, l := range lines {
		s := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(s, "NIC Legend"):
			in = true
		case in && s == "":
			if len(out) > 0 {
				return out
			}
		case in:
			if k, v, ok := strings.Cut(s, ":"); ok {
				out[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// firstInt is the first integer in s ("0", "0-1", "N/A" -> -1).
func firstInt(s string) int {
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == 0 {
		return -1
	}
	n, _ := strconv.Atoi(s[:end])
	return n
}

// fullMesh: every pair of GPUs is NVLinked.
func fullMesh(nv [][]int) bool {
	for i := range nv {
		for j := range nv[i] {
			if i != j && nv[i][j] == 0 {
				return false
			}
		}
	}
	return len(nv) > 1
}
