package paddleetcd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Event is one change a watch saw: a put of Value, or a delete (Delete),
// of Key; Prev is the key as it was before, when the watch asked for it.
type Event struct {
	Delete bool
	Key    string
	Value  string
	Prev   *KV
}

// Watch streams the changes under prefix (etcd's JSON gateway, POST
// /v3/watch) to events until ctx ends or the stream does: it returns the
// reason, which is the store's interruption (a reset connection, the
// stream cut) unless ctx ended. created, if not nil, is called once etcd
// has set the watch up; prevKV asks for the keys' previous values. No
// request timeout: the stream lasts as long as its caller.
func (g *Gateway) Watch(ctx context.Context, prefix string, prevKV bool, created func(), events func([]Event)) error {
	body, _ := json.Marshal(map[string]interface{}{"create_request": map[string]interface{}{
		"key": Base64(prefix), "range_end": Base64(PrefixEnd(prefix)), "prev_kv": prevKV,
	}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(g.URL, "/")+"/v3/watch", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: Timeout}).DialContext}}).Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s watch: %w", g.URL, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s watch: %s", g.URL, res.Status)
	}
	dec := json.NewDecoder(bufio.NewReader(res.Body))
	for {
		// mvccpb.Event in JSON: int64 fields as strings, the enum type
		// as its name, PUT (0) omitted.
		var msg struct {
			Result struct {
				Created bool `json:"created"`
				Events  []struct {
					Type string `json:"type"`
					KV   struct {
						Key   string `json:"key"`
						Value string `json:"value"`
					} `json:"kv"`
					PrevKV *struct {
						Key   string `json:"key"`
						Value string `json:"value"`
						Lease string `json:"lease"`
					} `json:"prev_kv"`
				} `json:"events"`
				Canceled bool `json:"canceled"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			return fmt.Errorf("etcd %s watch: %w", g.URL, err)
		}
		if msg.Error != nil {
			return fmt.Errorf("etcd %s watch: %s", g.URL, msg.Error.Message)
		}
		if msg.Result.Canceled {
			return fmt.Errorf("etcd %s watch canceled", g.URL)
		}
		if msg.Result.Created && created != nil {
			created()
		}
		if len(msg.Result.Events) == 0 {
			continue
		}
		out := make([]Event, 0, len(msg.Result.Events))
		for _, e := range msg.Result.Events {
			key, _ := FromBase64(e.KV.Key)
			value, _ := FromBase64(e.KV.Value)
			ev := Event{Delete: e.Type == "DELETE", Key: key, Value: value}
			if p := e.PrevKV; p != nil {
				k, err1 := FromBase64(p.Key)
				v, err2 := FromBase64(p.Value)
				if err1 == nil && err2 == nil {
					ev.Prev = &KV{Key: k, Value: v, Lease: p.Lease}
					if ev.Key == "" {
						ev.Key = k
					}
				}
			}
			out = append(out, ev)
		}
		events(out)
	}
}
