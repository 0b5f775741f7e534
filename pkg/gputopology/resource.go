package gputopology

// ResourceName is the extended resource NVIDIA's device plugin advertises
// for whole GPUs (k8s-device-plugin: the default resource name). It is an
// untyped constant so that it is a v1.ResourceName wherever one is wanted
// without this package importing the Kubernetes API.
const ResourceName = "nvidia.com/gpu"
