package paddleelastic

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
)

// BeatKeeper puts back the heartbeat keys of live launchers when a joining
// launcher wipes them.
//
// Every starting launcher deletes its job's whole prefix /paddle/<job_id>
// (controllers/master.py: ETCDMaster.register_heartbeat), the running
// launchers' heartbeats included, and they put theirs back only at their
// next beat, up to ttl/2 = 5 s later. Until then the joiner counts fewer
// than MAX peers, so a replacement that brings the job back to MAX waits
// 0-5 s for nothing (measured 2.5-7.3 s from its start to the full world).
// A heartbeat key is bound to its launcher's lease, which the launcher
// keeps refreshing: putting the key back with the same lease is what the
// launcher's own next beat does, only sooner.
//
// It puts back only the key of a launcher whose rendezvous record places
// it on a pod that is alive (Alive), and never one the loss notice removed;
// a key whose lease expired cannot be put back (etcd refuses the lease).
type BeatKeeper struct {
	G     *paddleetcd.Gateway
	JobID string
	// Alive says whether a pod of the job with this IP is running and not
	// being deleted.
	Alive func(ip string) bool

	mu       sync.Mutex
	noticed  map[string]bool
	watching bool
}

// Watching reports whether the keeper's watch is established.
func (k *BeatKeeper) Watching() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.watching
}

func (k *BeatKeeper) setWatching(w bool) {
	k.mu.Lock()
	k.watching = w
	k.mu.Unlock()
}

// Noticed records Paddle pod names whose heartbeat the loss notice
// removes: those stay away (their revoked lease would refuse the put
// anyway).
func (k *BeatKeeper) Noticed(names []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.noticed == nil || len(k.noticed) > 10000 {
		k.noticed = map[string]bool{}
	}
	for _, n := range names {
		k.noticed[n] = true
	}
}

func (k *BeatKeeper) wasNoticed(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.noticed[name]
}

// Run watches the job's heartbeats until ctx ends, re-watching after
// errors.
func (k *BeatKeeper) Run(ctx context.Context) {
	for ctx.Err() == nil {
		err := k.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		klog.V(2).InfoS("Watching Paddle heartbeats", "etcd", k.G.URL, "job", k.JobID, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// watchEvent is an event of etcd's JSON watch stream (mvccpb.Event; int64
// fields as strings, the enum type as its name, PUT omitted).
type watchEvent struct {
	Type   string `json:"type"`
	PrevKV *struct {
		Key   string `json:"key"`
		Value string `json:"value"`
		Lease string `json:"lease"`
	} `json:"prev_kv"`
}

func (k *BeatKeeper) watch(ctx context.Context) error {
	prefix := paddleetcd.HeartbeatPrefix(k.JobID)
	body, _ := json.Marshal(map[string]interface{}{"create_request": map[string]interface{}{
		"key": paddleetcd.Base64(prefix), "range_end": paddleetcd.Base64(paddleetcd.PrefixEnd(prefix)), "prev_kv": true,
	}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(k.G.URL, "/")+"/v3/watch", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	// No client timeout: the stream lasts as long as the job.
	res, err := (&http.Client{Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: paddleetcd.Timeout}).DialContext}}).Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	defer k.setWatching(false)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("watch: %s", res.Status)
	}
	dec := json.NewDecoder(bufio.NewReader(res.Body))
	for {
		var msg struct {
			Result struct {
				Created  bool         `json:"created"`
				Events   []watchEvent `json:"events"`
				Canceled bool         `json:"canceled"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			return err
		}
		if msg.Error != nil {
			return fmt.Errorf("watch: %s", msg.Error.Message)
		}
		if msg.Result.Canceled {
			return fmt.Errorf("watch canceled")
		}
		if msg.Result.Created {
			k.setWatching(true)
		}
		var wiped []watchEvent
		for _, e := range msg.Result.Events {
			if e.Type == "DELETE" && e.PrevKV != nil && e.PrevKV.Lease != "" && e.PrevKV.Lease != "0" {
				wiped = append(wiped, e)
			}
		}
		if len(wiped) > 0 {
			k.restore(ctx, wiped)
		}
	}
}

// restore puts back the wiped keys of live launchers.
func (k *BeatKeeper) restore(ctx context.Context, wiped []watchEvent) {
	records, err := k.G.Prefix(ctx, paddleetcd.InfoPrefix(k.JobID))
	if err != nil {
		klog.V(2).InfoS("Reading Paddle rendezvous records", "job", k.JobID, "err", err)
		return
	}
	ipOf := map[string]string{}
	for _, kv := range records {
		var r rendezvousRecord
		if json.Unmarshal([]byte(kv.Value), &r) != nil {
			continue
		}
		if host, _, err := net.SplitHostPort(r.Candidate); err == nil {
			ipOf[r.Name] = host
		}
	}
	var restored []string
	for _, e := range wiped {
		key, err1 := paddleetcd.FromBase64(e.PrevKV.Key)
		name, err2 := paddleetcd.FromBase64(e.PrevKV.Value)
		if err1 != nil || err2 != nil || key != paddleetcd.HeartbeatKey(k.JobID, name) || k.wasNoticed(name) {
			continue
		}
		ip, ok := ipOf[name]
		if !ok || !k.Alive(ip) {
			continue
		}
		// Refused when the lease has expired: the launcher is gone.
		if _, err := k.G.Put(ctx, key, name, e.PrevKV.Lease); err == nil {
			restored = append(restored, name)
		}
	}
	if len(restored) > 0 {
		klog.V(2).InfoS("Put back the heartbeats of live Paddle launchers after a joiner wiped them", "job", k.JobID, "paddlePods", restored)
	}
}
