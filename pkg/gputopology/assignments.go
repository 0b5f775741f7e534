package gputopology

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// AssignmentsAnnotation is set on a node by the agent: which GPUs the
// kubelet gave to which pods, read from the kubelet's PodResources API.
// It is a separate annotation from the topology, which rarely changes and
// whose parsed model is cached by value.
const AssignmentsAnnotation = "paddle.volcano.sh/gpu-assignments"

// Assignments is the decoded value of AssignmentsAnnotation.
type Assignments struct {
	// Observed is when the agent last confirmed the assignments against the
	// kubelet; the agent rewrites it (and nothing else) when it gets older
	// than its heartbeat, so a reader can tell a live agent from a dead one.
	Observed time.Time `json:"observed"`
	// Pods maps "namespace/name" to the indices of the pod's GPUs.
	Pods map[string][]int `json:"pods"`
}

// ParseAssignments decodes an annotation value.
func ParseAssignments(value string) (*Assignments, error) {
	var a Assignments
	if err := json.Unmarshal([]byte(value), &a); err != nil {
		return nil, fmt.Errorf("annotation %s is not valid JSON: %w", AssignmentsAnnotation, err)
	}
	if a.Observed.IsZero() {
		return nil, fmt.Errorf("annotation %s: observed is missing", AssignmentsAnnotation)
	}
	return &a, nil
}

// Encode returns the annotation value.
func (a *Assignments) Encode() string {
	b, _ := json.Marshal(a)
	return string(b)
}

// Age is how old the assignments are at now.
func (a *Assignments) Age(now time.Time) time.Duration { return now.Sub(a.Observed) }

// SamePods reports whether two assignments give the same GPUs to the same
// pods (the observation time aside).
func (a *Assignments) SamePods(b *Assignments) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.Pods) != len(b.Pods) {
		return false
	}
	for k, v := range a.Pods {
		w, ok := b.Pods[k]
		if !ok || len(v) != len(w) {
			return false
		}
		for i := range v {
			if v[i] != w[i] {
				return false
			}
		}
	}
	return true
}

// PodRequest is a GPU pod on a node: its "namespace/name", GPU count and
// creation time.
type PodRequest struct {
	Key     string
	GPUs    int
	Created time.Time
}

// Source says where a node's GPU assignments came from.
type Source string

const (
	// SourceAgent: every pod's GPUs as the agent reported them.
	SourceAgent Source = "agent"
	// SourcePredicted: every pod's GPUs as NVIDIA's allocator would pick.
	SourcePredicted Source = "predicted"
	// SourceMixed: the agent's report, and a prediction for pods it has
	// not seen yet (placed after its last observation).
	SourceMixed Source = "agent+predicted"
)

// Occupancy is which GPUs of a node each pod holds, and which are free.
type Occupancy struct {
	Free   Set
	Pods   map[string]Set
	Source Source
}

// Occupy replays the GPU pods of a node: pods the agent reported (asg, nil
// when absent or too old) hold the GPUs it saw; every other pod, in the
// order the kubelet admitted them (creation time; the given order among
// equal times), holds what Predict gives it on the GPUs still free.
func (m *Model) Occupy(pods []PodRequest, asg *Assignments) Occupancy {
	pods = append([]PodRequest(nil), pods...)
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].Created.Before(pods[j].Created) })
	o := Occupancy{Free: All(m.N()), Pods: make(map[string]Set, len(pods))}
	reported, predicted := 0, 0
	if asg != nil {
		for _, p := range pods {
			idx, ok := asg.Pods[p.Key]
			if !ok {
				continue
			}
			var s Set
			for _, i := range idx {
				if pos, ok := m.byIndex[i]; ok && o.Free.Has(pos) {
					s |= 1 << pos
				}
			}
			o.Pods[p.Key] = s
			o.Free &^= s
			reported++
		}
	}
	for _, p := range pods {
		if _, done := o.Pods[p.Key]; done || p.GPUs <= 0 {
			continue
		}
		s, _ := m.Predict(o.Free, min(p.GPUs, o.Free.Count()))
		o.Pods[p.Key] = s
		o.Free &^= s
		predicted++
	}
	switch {
	case predicted == 0 && asg != nil:
		o.Source = SourceAgent
	case reported == 0:
		o.Source = SourcePredicted
	default:
		o.Source = SourceMixed
	}
	return o
}
