package paddlejob

import v1 "k8s.io/api/core/v1"

// NonRootUID is the user the containers the plugin adds run as: the nonroot
// user of distroless images, which our images (internal/images) and the
// barrier's are. Set explicitly, since registry.k8s.io/etcd runs as root and
// a pod may set runAsUser 0 for its own containers.
const NonRootUID int64 = 65532

// restrictedContainer is the security context of every container the plugin
// adds to a job (the DNS barrier) or creates for it (the etcd store): what
// Pod Security's "restricted" profile asks of a container (Kubernetes'
// pod-security-admission policy package: check_runAsNonRoot,
// check_allowPrivilegeEscalation, check_capabilities_restricted,
// check_seccompProfile_restricted), so that a job whose own containers
// comply starts in a restricted namespace.
func restrictedContainer() *v1.SecurityContext {
	nonRoot, escalate, uid := true, false, NonRootUID
	return &v1.SecurityContext{
		RunAsNonRoot:             &nonRoot,
		RunAsUser:                &uid,
		RunAsGroup:               &uid,
		AllowPrivilegeEscalation: &escalate,
		Capabilities:             &v1.Capabilities{Drop: []v1.Capability{"ALL"}},
		SeccompProfile:           &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
	}
}
