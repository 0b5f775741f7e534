package quality

import (
	"fmt"
	"math"
	"testing"
)

const polluxDir = "testdata/pollux"

// placementPods turns a Pollux placement string ("4", "22") into pods on
// T4 nodes: one pod per GPU, each GPU its own island (PCIe, no NVLink).
func placementPods(placement string) []Pod {
	var pods []Pod
	for node, ch := range placement {
		for g := 0; g < int(ch-'0'); g++ {
			pods = append(pods, Pod{Node: fmt.Sprintf("n%d", node), Rack: "r0", GPUs: 1, Islands: []int{g}})
		}
	}
	return pods
}

// splitPackedRatios compares model and measurement for a 4-GPU job split
// 2+2 over two nodes against packed on one, at every batch size measured.
func splitPackedRatios(t *testing.T, name string) (model, measured []float64) {
	t.Helper()
	models, err := Models(polluxDir)
	if err != nil {
		t.Fatal(err)
	}
	meas, err := LoadPlacements(polluxDir, name)
	if err != nil {
		t.Fatal(err)
	}
	m := models[name]
	for _, b := range meas.BatchSizes("4", "22") {
		packed := CollectiveStep(T4PCIe, m, b, placementPods("4"))
		split := CollectiveStep(T4PCIe, m, b, placementPods("22"))
		model = append(model, split/packed)
		measured = append(measured, meas["22"][b]/meas["4"][b])
	}
	return model, measured
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// With the 4xT4 PCIe preset, the model reproduces the measured slowdown of
// splitting a 4-GPU job 2+2 over two nodes (mean over the measured batch
// sizes) within 20% for imagenet, bert and ncf. The preset's bandwidths and
// latency were fitted to these three, so this checks that the model's form
// can express the measurements; the other three models are out of sample
// (reported on the bench pages, docs/bench/full/README.md; asserted loosely below).
func TestCalibration(t *testing.T) {
	for _, name := range []string{"imagenet", "bert", "ncf"} {
		model, measured := splitPackedRatios(t, name)
		if len(model) < 4 {
			t.Fatalf("%s: only %d batch sizes", name, len(model))
		}
		mm, ms := mean(model), mean(measured)
		t.Logf("%-9s split/packed: model %.2f, measured %.2f (%+.0f%%) over %d batch sizes", name, mm, ms, 100*(mm/ms-1), len(model))
		if math.Abs(mm/ms-1) > 0.20 {
			t.Errorf("%s: model %.2f vs measured %.2f: more than 20%% off", name, mm, ms)
		}
	}
	// Out of sample: the model still sees that splitting hurts (>1) and
	// stays within a factor of 1.6.
	for _, name := range []string{"cifar10", "yolov3", "deepspeech2"} {
		model, measured := splitPackedRatios(t, name)
		mm, ms := mean(model), mean(measured)
		t.Logf("%-9s split/packed: model %.2f, measured %.2f (%+.0f%%), out of sample", name, mm, ms, 100*(mm/ms-1))
		if mm <= 1 || mm/ms > 1.6 || ms/mm > 1.6 {
			t.Errorf("%s (out of sample): model %.2f vs measured %.2f", name, mm, ms)
		}
	}
}

// Basic properties of the cost model, independent of calibration.
func TestCostModelProperties(t *testing.T) {
	models, err := Models(polluxDir)
	if err != nil {
		t.Fatal(err)
	}
	m := models["bert"]
	island := []Pod{{Node: "a", Rack: "r", GPUs: 2, Islands: []int{0}}, {Node: "a", Rack: "r", GPUs: 2, Islands: []int{0}}}
	twoIslands := []Pod{{Node: "a", Rack: "r", GPUs: 2, Islands: []int{0}}, {Node: "a", Rack: "r", GPUs: 2, Islands: []int{1}}}
	twoNodes := []Pod{{Node: "a", Rack: "r", GPUs: 2, Islands: []int{0}}, {Node: "b", Rack: "r", GPUs: 2, Islands: []int{0}}}
	twoRacks := []Pod{{Node: "a", Rack: "r", GPUs: 2, Islands: []int{0}}, {Node: "b", Rack: "s", GPUs: 2, Islands: []int{0}}}
	p := PCIeNVLinkPairs
	steps := []float64{CollectiveStep(p, m, m.Bsz, island), CollectiveStep(p, m, m.Bsz, twoIslands),
		CollectiveStep(p, m, m.Bsz, twoNodes), CollectiveStep(p, m, m.Bsz, twoRacks)}
	for i := 1; i < len(steps); i++ {
		if steps[i] <= steps[i-1] {
			t.Errorf("step times should grow island < two islands < two nodes < two racks: %v", steps)
		}
	}
	// PS: pservers next to their trainers beat pservers across the rack.
	near := []Pod{{Node: "a", Rack: "r", PServer: true}, {Node: "a", Rack: "r", GPUs: 1}, {Node: "b", Rack: "r", GPUs: 1}}
	far := []Pod{{Node: "c", Rack: "s", PServer: true}, {Node: "a", Rack: "r", GPUs: 1}, {Node: "b", Rack: "r", GPUs: 1}}
	if PSStep(p, m, m.Bsz, near) >= PSStep(p, m, m.Bsz, far) {
		t.Error("PS job with a pserver on a trainer's node is not faster than one across racks")
	}
	if c, tot := PSCrossNICBytes(m, near); c != tot/2 {
		t.Errorf("one of two pairs crosses a NIC: %g of %g", c, tot)
	}
}
