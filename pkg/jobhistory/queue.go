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
// queue, LevelNamespaceSize without the queue). It survives scheduler restarts with
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
	// Recorded: the jobs recorded that ended within RecordSlack of the
	// newest, UID -> end in Unix seconds (QueueHistory).
	Recorded map[string]int64 `json:"recorded,omitempty"`
}

// queueLevels are the levels a queue's history holds.
var queueLevels = []string{LevelShape, LevelNamespaceSize}

// queueKey is a key of level l without its queue, and ok when the key
// belongs to queue.
func queueKey(l, key, queue string) (string, bool) {
	switch l {
	case LevelShape, LevelNamespaceSize:
		// namespace/queue/mode/PxG/gpus, namespace/queue/gpus
		parts := strings.SplitN(key, "/", 3)
		if len(parts) != 3 || parts[1] != queue {
			return "", false
		}
		return parts[0] + "/" + parts[2], true
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
	case LevelNamespaceSize:
		ns, gpus, ok := strings.Cut(key, "/")
		if _, err := strconv.Atoi(gpus); !ok || err != nil {
			return "", fmt.Errorf("key %q of level %s: want namespace/GPUS", key, l)
		}
		return ns + "/" + queue + "/" + gpus, nil
	}
	return "", fmt.Errorf("level %q: a queue's history holds %s", l, strings.Join(queueLevels, " and "))
}

// EncodeQueue is queue's history as this predictor knows it, at most
// MaxQueueKeys keys, the most recently observed kept.
func (p *Predictor) EncodeQueue(queue string, now time.Time) ([]byte, error) {
	return p.encodeQueue(queue, now, now, nil)
}

// encodeQueue writes every key's sums as of when it was last observed,
// that time moved by stamp - now.
func (p *Predictor) encodeQueue(queue string, now, stamp time.Time, recorded map[string]int64) ([]byte, error) {
	shift := stamp.Sub(now)
	e := encodedQueue{Recorded: recorded, Format: queueFormat, HalfLife: p.HalfLife.String(), Levels: map[string]map[string][4]float64{}}
	type entry struct {
		level, key string
		s          stat
	}
	var all []entry
	for _, l := range queueLevels {
		for k, s := range p.levels[l] {
			if qk, ok := queueKey(l, k, queue); ok {
				all = append(all, entry{l, qk, *s})
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
		e.Levels[en.level][en.key] = [4]float64{short(en.s.W), short(en.s.SumLog), short(en.s.SumLog2), float64(en.s.Last.Add(shift).Unix())}
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
	_, err := p.addQueue(queue, data)
	return err
}

func (p *Predictor) addQueue(queue string, data []byte) (*encodedQueue, error) {
	e, err := p.decodeQueue(queue, data)
	if err != nil {
		return nil, fmt.Errorf("history of queue %s: %w", queue, err)
	}
	return e, nil
}

func (p *Predictor) decodeQueue(queue string, data []byte) (*encodedQueue, error) {
	var e encodedQueue
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, err
	}
	if e.Format != queueFormat {
		return nil, fmt.Errorf("format %d, this build reads %d", e.Format, queueFormat)
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
				return nil, err
			}
			s := stat{W: v[0], SumLog: v[1], SumLog2: v[2], Last: time.Unix(int64(v[3]), 0).UTC()}
			if !(s.W > 0) || math.IsInf(s.W, 0) || math.IsNaN(s.SumLog) || math.IsInf(s.SumLog, 0) || math.IsNaN(s.SumLog2) || math.IsInf(s.SumLog2, 0) {
				return nil, fmt.Errorf("key %q of level %s: weight %v and sums %v, %v are not a history", k, l, v[0], v[1], v[2])
			}
			adds = append(adds, add{l, full, s})
			n++
		}
	}
	if n > MaxQueueKeys {
		return nil, fmt.Errorf("%d keys, at most %d", n, MaxQueueKeys)
	}
	if len(e.Recorded) > maxRecorded {
		return nil, fmt.Errorf("%d recorded jobs, at most %d", len(e.Recorded), maxRecorded)
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
	return &e, nil
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

// RecordSlack: a job is recorded in its queue's history unless it is
// there already or ended more than this before the newest job recorded
// (the controller sees jobs end in about the order they do; one that
// ended longer ago was recorded before, or ended while the controller was
// down for longer, and is left out).
const RecordSlack = time.Hour

// maxRecorded bounds the jobs a queue's history remembers as recorded
// (those within RecordSlack of the newest).
const maxRecorded = 4096

// QueueHistory is one queue's history as the controller that records it
// holds it between reading and writing its Queue.
type QueueHistory struct {
	queue    string
	p        *Predictor
	recorded map[string]int64
	newest   int64
}

// NewQueueHistory is queue's history from its annotation ("" when it has
// none yet). An annotation it cannot read is an error naming the queue;
// the caller may start afresh with NewQueueHistory(queue, "").
func NewQueueHistory(queue, annotation string) (*QueueHistory, error) {
	h := &QueueHistory{queue: queue, p: NewPredictor(LevelShape, LevelNamespaceSize), recorded: map[string]int64{}}
	if annotation == "" {
		return h, nil
	}
	e, err := h.p.addQueue(queue, []byte(annotation))
	if err != nil {
		return nil, err
	}
	for uid, end := range e.Recorded {
		h.recorded[uid] = end
		h.newest = max(h.newest, end)
	}
	return h, nil
}

// Record adds the finished job uid, r, to the history; false when it is
// there already or ended more than RecordSlack before the newest.
func (h *QueueHistory) Record(uid string, r Record) bool {
	end := Known(r)
	u := end.Unix()
	if _, ok := h.recorded[uid]; ok || u < h.newest-int64(RecordSlack/time.Second) {
		return false
	}
	h.p.Observe(FeaturesOf(r), end, r.Duration)
	h.recorded[uid] = u
	if u > h.newest {
		h.newest = u
		for id, e := range h.recorded {
			if e < h.newest-int64(RecordSlack/time.Second) {
				delete(h.recorded, id)
			}
		}
	}
	if len(h.recorded) > maxRecorded {
		// More jobs ended within the slack than it remembers: forget the
		// oldest; a late copy of one of them would be counted twice.
		type ended struct {
			uid string
			at  int64
		}
		var all []ended
		for id, e := range h.recorded {
			all = append(all, ended{id, e})
		}
		sortByLast(all, func(e ended) (time.Time, string) { return time.Unix(e.at, 0), e.uid })
		for _, e := range all[:len(all)-maxRecorded] {
			delete(h.recorded, e.uid)
		}
	}
	return true
}

// Takes: Record could still take the job uid if it ended at or before
// ended; false when it is recorded already or ended too long before the
// newest. Lets a caller skip reading a job (its pods) that would only be
// refused.
func (h *QueueHistory) Takes(uid string, ended time.Time) bool {
	_, ok := h.recorded[uid]
	return !ok && ended.Unix() >= h.newest-int64(RecordSlack/time.Second)
}

// Annotation is the history to write back on the Queue, as of now.
func (h *QueueHistory) Annotation(now time.Time) (string, error) {
	return h.AnnotationAs(now, now)
}

// AnnotationAs is the history as of now, written as if now were stamp: a
// simulation whose scheduler reads another clock than the one its jobs
// end by (bench/replay) hands it the history as the product would.
func (h *QueueHistory) AnnotationAs(now, stamp time.Time) (string, error) {
	data, err := h.p.encodeQueue(h.queue, now, stamp, h.recorded)
	return string(data), err
}
