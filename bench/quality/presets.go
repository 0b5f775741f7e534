package quality

// Presets of node types. Values are facts from vendor specifications and
// published measurements where cited, or calibrated against the Pollux
// measurements (see TestCalibration); assumptions are marked as such.
var (
	// H100SXM: NVIDIA DGX H100 / HGX H100: 8 H100 SXM5 on NVSwitch
	// (NVLink 4, 900 GB/s per GPU), one island. 450 GB/s is the all-reduce
	// bus bandwidth NVIDIA reports for nccl-tests on 8 H100 SXM (order of
	// 450-480 GB/s). 8 ConnectX-7 400 Gb/s NICs, one per GPU (DGX H100
	// system guide). NIC efficiency 0.9: nccl-tests over InfiniBand reach
	// about 90% of line rate (assumption within published ranges).
	// Compute 15x a T4: 989 vs 65 dense FP16 tensor TFLOPS (datasheets).
	H100SXM = nvSwitch8("8xH100-NVSwitch", 450, 400, 15,
		"DGX H100 guide (NVSwitch, 8x CX-7 400Gb/s); nccl-tests busbw ~450 GB/s; H100 989 / T4 65 FP16 TFLOPS")

	// A100SXM: NVIDIA DGX A100 / HGX A100: 8 A100 SXM4 on NVSwitch (NVLink
	// 3, 600 GB/s per GPU), one island; nccl-tests all-reduce bus bandwidth
	// about 230 GB/s. 8 ConnectX-6 200 Gb/s NICs (DGX A100 guide). Compute
	// 4.8x a T4: 312 vs 65 FP16 tensor TFLOPS.
	A100SXM = nvSwitch8("8xA100-NVSwitch", 230, 200, 4.8,
		"DGX A100 guide (NVSwitch, 8x CX-6 200Gb/s); nccl-tests busbw ~230 GB/s; A100 312 / T4 65 FP16 TFLOPS")

	// PCIeNVLinkPairs: 8 PCIe A100 cards joined in pairs by NVLink bridges
	// (NVLink 3 bridge: 600 GB/s bidirectional per pair; 200 GB/s bus
	// bandwidth assumed for a 2-GPU ring), islands of 2; between pairs the
	// ring crosses PCIe Gen4 and the CPU interconnect (about 12 GB/s
	// achieved, assumption: half of PCIe Gen4 x16's 32 GB/s per direction).
	// 2 NICs of 100 Gb/s. Compute as A100.
	PCIeNVLinkPairs = Preset{Name: "8xPCIe-NVLink-pairs", GPUsPerNode: 8, IslandSize: 2, IslandGBps: 200, CrossIslandGBps: 12,
		NICsPerNode: 2, NICGbps: 100, NICEfficiency: 0.9, NetLatency: 10e-6, RackOversubscription: 2, ComputeScale: 4.8,
		Source: "A100 PCIe NVLink bridge 600 GB/s per pair; PCIe Gen4 x16 32 GB/s/dir; 2x 100Gb/s NICs"}

	// T4PCIe: the nodes of the Pollux measurements: AWS g4dn.12xlarge, 4 T4
	// on PCIe Gen3 (no NVLink: each GPU its own island), 50 Gb/s network
	// (Pollux artifact README). The achieved bandwidths and latency are
	// calibrated to the measured step times of imagenet, bert and ncf
	// (TestCalibration): 5 GB/s between GPUs of a node, 0.4 GB/s across
	// nodes (TCP with host staging: 6% of the 50 Gb/s line rate), 1 ms per
	// ring step across nodes; overlap exponent 2.5 for all models.
	T4PCIe = Preset{Name: "4xT4-PCIe", GPUsPerNode: 4, IslandSize: 1, IslandGBps: 5, CrossIslandGBps: 5,
		NICsPerNode: 1, NICGbps: 50, NICEfficiency: 0.064, NetLatency: 1e-3, RackOversubscription: 2, ComputeScale: 1,
		Source: "AWS g4dn.12xlarge (4x T4 PCIe, 50 Gb/s); bandwidths and latency fitted to Pollux measurements"}
)

// nvSwitch8 is an 8-GPU node on NVSwitch, one island whose all-reduce runs
// at busGBps, with one NIC of nicGbps per GPU (the DGX/HGX design).
func nvSwitch8(name string, busGBps, nicGbps, computeScale float64, source string) Preset {
	return Preset{Name: name, GPUsPerNode: 8, IslandSize: 8, IslandGBps: busGBps, CrossIslandGBps: busGBps,
		NICsPerNode: 8, NICGbps: nicGbps, NICEfficiency: 0.9, NetLatency: 10e-6, RackOversubscription: 2, ComputeScale: computeScale,
		Source: source}
}

// Presets in the order the benchmarks report them.
var Presets = []Preset{H100SXM, A100SXM, PCIeNVLinkPairs, T4PCIe}

// RackOversubscription 2:1 at the rack uplinks is an assumption (a common
// leaf-spine design point); every preset uses it.
