package quality

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// Measurements are the per-step times of one model in the Pollux artifact
// (simulator/traces/<model>/placements.csv): mean step time by placement
// (GPUs per node, one digit per node) and per-GPU batch size.
type Measurements map[string]map[int]float64

// LoadPlacements reads <dir>/<model>/placements.csv.
func LoadPlacements(dir, model string) (Measurements, error) {
	rows, err := readCSV(filepath.Join(dir, model, "placements.csv"))
	if err != nil {
		return nil, err
	}
	sum := map[string]map[int]float64{}
	cnt := map[string]map[int]int{}
	for i, r := range rows {
		if i == 0 {
			continue
		}
		if len(r) < 3 {
			return nil, fmt.Errorf("%s row %d: %v", model, i, r)
		}
		bsz, err := strconv.Atoi(r[1])
		if err != nil {
			return nil, err
		}
		st, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			return nil, err
		}
		if sum[r[0]] == nil {
			sum[r[0]], cnt[r[0]] = map[int]float64{}, map[int]int{}
		}
		sum[r[0]][bsz] += st
		cnt[r[0]][bsz]++
	}
	out := Measurements{}
	for p, m := range sum {
		out[p] = map[int]float64{}
		for b, s := range m {
			out[p][b] = s / float64(cnt[p][b])
		}
	}
	return out, nil
}

// BatchSizes are the per-GPU batch sizes measured for every given placement.
func (m Measurements) BatchSizes(placements ...string) []int {
	var out []int
	for b := range m["1"] {
		ok := true
		for _, p := range placements {
			if _, has := m[p][b]; !has {
				ok = false
			}
		}
		if ok {
			out = append(out, b)
		}
	}
	sort.Ints(out)
	return out
}

// Models are the Pollux workloads with their parameter counts (the papers
// that define them) and their measured single-GPU profiles.
func Models(dir string) (map[string]Model, error) {
	params := map[string]float64{
		"imagenet":    25.6e6, // ResNet-50 (He et al. 2016)
		"bert":        110e6,  // BERT-base (Devlin et al. 2019)
		"ncf":         0.63e6, // NeuMF on MovieLens-1M: 6,040 users, 3,706 items, 32+32-dim embeddings (He et al. 2017)
		"cifar10":     11.2e6, // ResNet-18 (He et al. 2016)
		"yolov3":      61.9e6, // YOLOv3 (Redmon and Farhadi 2018)
		"deepspeech2": 87e6,   // DeepSpeech2 as in Pollux's artifact (order of magnitude of Amodei et al. 2016)
	}
	out := map[string]Model{}
	for name, n := range params {
		m, err := LoadPlacements(dir, name)
		if err != nil {
			return nil, err
		}
		bs := m.BatchSizes()
		out[name] = Model{Name: name, Params: n, Gamma: 2.5, Profile: m["1"], Bsz: bs[len(bs)/2]}
	}
	return out, nil
}

func readCSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return csv.NewReader(f).ReadAll()
}
