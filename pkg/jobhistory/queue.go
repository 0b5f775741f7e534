package jobhistory

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// A queue's history is kept on the Volcano Queue itself, in the annotation
// paddleapi.RunTimeHistoryAnnotation: what its finished jobs ran, by the
// keys of the two levels that belong to one queue (LevelShape without the
// queue, LevelQueueSize's total GPUs). It survives scheduler restarts with
// the Queue, needs no store of its own, and the scheduler reads it from the
// Queues it caches anyway. The levels across queues (LevelSize, LevelAll)
// are sums over every queue's (AddQueue).

// queueFormat is the version of the encoding EncodeQueue writes.
const queueFormat = 1

// MaxQueueKeys bounds the keys one queue's history holds (both levels
// together): about 60 bytes each encoded, so a queue's annotation stays
// under 64 KiB, a quarter of what Kubernetes allows an object's
// annotations in all.
const MaxQueueKeys = 1024

// encodedQueue is a queue's history as JSON: per level, key -> [weight,
// sum of ln run time in seconds, sum of its squares, last observed in Unix
// seconds].
type encodedQueue struct {
	Format   int                              `json:"format"`
	HalfLife string                           `json:"halfLife"`
	Levels   map[string]map[string][4]float64 `json:"levels"`
}

// queueLevels are the levels a queue's history holds.
var queueLevels = []string{LevelShape, LevelQueueSize}

// queueKey is a key of level l without its queue, and ok when the key
// belongs to queue.
func queueKey(l, key, queue string) (string, bool) {
	switch l {
	case LevelShape:
		// namespace/queue/mode/PxG/gpus
		parts := strings.SplitN(key, "/", 3)
		if len(parts) != 3 || parts[1] != queue {
			return "", false
		}
		return parts[0] + "/" + parts[2], true
	case LevelQueueSize:
		q, size, ok := strings.Cut(key, "/")
		return size, ok && q == queue
	}
	return "", false
}

// fullKey is queueKey's inverse.
func fullKey(l, key, queue string) (string, error) {
	switch l {
	case LevelShape:
		ns, rest, ok := strings.Cut(key, "/")
		if !ok || strings.Count(rest, "/") != 2 {
			return "", fmt.Errorf("key %q of level %s: want namespace/mode/PODSxGPUS/GPUS", key, l)
		}
		return ns + "/" + queue + "/" + rest, nil
	case LevelQueueSize:
		if _, err := strconv.Atoi(key); err != nil {
			return "", fmt.Errorf("key %q of level %s: want the total GPUs", key, l)
		}
		return queue + "/" + key, nil
	}
	return "", fmt.Errorf("level %q: a queue's history holds %s", l, strings.Join(queueLevels, " and "))
}

// EncodeQueue is queue's history as this predictor knows it, as of now
// (decayed), at most MaxQueueKeys keys, the most recently observed kept.
func (p *Predictor) EncodeQueue(queue string, now time.Time) ([]byte, error) {
	e := encodedQueue{Format: queueFormat, HalfLife: p.HalfLife.String(), Levels: map[string]map[string][4]float64{}}
	type entry struct {
		level, key string
		s          stat
	}
	var all []entry
	for _, l := range queueLevels {
		for k, s := range p.levels[l] {
			if qk, ok := queueKey(l, k, queue); ok {
				all = append(all, entry{l, qk, s.decayTo(now, p.HalfLife)})
			}
		}
	}
	if len(all) > MaxQueueKeys {
		// Keep the most recently observed.
		sortByLast(all, func(e entry) (time.Time, string) { return e.s.Last, e.level + e.key })
		all = all[len(all)-MaxQueueKeys:]
	}
	for _, en := range all {
		if e.Levels[en.level] == nil {
			e.Levels[en.level] = map[string][4]float64{}
		}
		e.Levels[en.level][en.key] = [4]float64{short(en.s.W), short(en.s.SumLog), short(en.s.SumLog2), float64(en.s.Last.Unix())}
	}
	return json.Marshal(e)
}

// short is x to 6 significant digits, which JSON then writes in as few:
// the predictions move by far less than their spread, and the encoding is
// half as long.
func short(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return v
}

// AddQueue takes queue's history as EncodeQueue wrote it: its keys replace
// what the predictor knew of the queue's, and its jobs count in the levels
// across queues. An encoding it cannot read is refused whole, naming what
// is wrong; the predictor is then unchanged.
func (p *Predictor) AddQueue(queue string, data []byte) error {
	var e encodedQueue
	if err := json.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("history of queue %s: %w", queue, err)
	}
	if e.Format != queueFormat {
		return fmt.Errorf("history of queue %s: format %d, this build reads %d", queue, e.Format, queueFormat)
	}
	type add struct {
		level, key string
		s          stat
	}
	var adds []add
	n := 0
	for l, keys := range e.Levels {
		for k, v := range keys {
			full, err := fullKey(l, k, queue)
			if err != nil {
				return fmt.Errorf("history of queue %s: %w", queue, err)
			}
			s := stat{W: v[0], SumLog: v[1], SumLog2: v[2], Last: time.Unix(int64(v[3]), 0).UTC()}
			if !(s.W > 0) || math.IsInf(s.W, 0) || math.IsNaN(s.SumLog) || math.IsInf(s.SumLog, 0) || math.IsNaN(s.SumLog2) || math.IsInf(s.SumLog2, 0) {
				return fmt.Errorf("history of queue %s: key %q of level %s: weight %v and sums %v, %v are not a history", queue, k, l, v[0], v[1], v[2])
			}
			adds = append(adds, add{l, full, s})
			n++
		}
	}
	if n > MaxQueueKeys {
		return fmt.Errorf("history of queue %s: %d keys, at most %d", queue, n, MaxQueueKeys)
	}
	for _, a := range adds {
		if p.levels[a.level] == nil {
			continue
		}
		p.levels[a.level][a.key] = &stat{W: a.s.W, SumLog: a.s.SumLog, SumLog2: a.s.SumLog2, Last: a.s.Last}
		// The shape level's jobs are every job of the queue once: they
		// make up the levels across queues.
		if a.level != LevelShape {
			continue
		}
		gpus, _ := strconv.Atoi(a.key[strings.LastIndex(a.key, "/")+1:])
		p.merge(LevelSize, strconv.Itoa(sizeBucket(gpus)), a.s)
		p.merge(LevelAll, "", a.s)
	}
	return nil
}

// merge adds s's jobs to key k of level l.
func (p *Predictor) merge(l, k string, s stat) {
	keys := p.levels[l]
	if keys == nil {
		return
	}
	cur, ok := keys[k]
	if !ok {
		keys[k] = &stat{W: s.W, SumLog: s.SumLog, SumLog2: s.SumLog2, Last: s.Last}
		return
	}
	at := cur.Last
	if s.Last.After(at) {
		at = s.Last
	}
	a, b := cur.decayTo(at, p.HalfLife), s.decayTo(at, p.HalfLife)
	*cur = stat{W: a.W + b.W, SumLog: a.SumLog + b.SumLog, SumLog2: a.SumLog2 + b.SumLog2, Last: at}
}
