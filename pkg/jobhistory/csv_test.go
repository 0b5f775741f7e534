package jobhistory

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// header is the history header as the format defines it; the test spells
// it out so that a change of Columns fails here.
const header = "submit_time,duration_s,pods,gpus_per_pod,queue,namespace,mode,min_pods,max_pods,checkpointable,pservers,start_time,phase,restarts,times_from,name"

// rec builds a valid record fluently.
type recBuilder struct{ Record }

func aRecord() *recBuilder {
	return &recBuilder{Record{
		SubmitTime: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC),
		Duration:   90 * time.Second,
		Pods:       2, GPUsPerPod: 4, MinPods: 2, MaxPods: 2,
		Queue: "default", Namespace: "ml",
	}}
}

func (b *recBuilder) shape(pods, gpus int) *recBuilder {
	b.Pods, b.GPUsPerPod, b.MinPods, b.MaxPods = pods, gpus, pods, pods
	return b
}
func (b *recBuilder) elastic(lo, hi int) *recBuilder   { b.MinPods, b.MaxPods = lo, hi; return b }
func (b *recBuilder) mode(m Mode) *recBuilder          { b.Mode = m; return b }
func (b *recBuilder) ps(n int) *recBuilder             { b.Mode, b.PServers = ModePS, n; return b }
func (b *recBuilder) took(d time.Duration) *recBuilder { b.Duration = d; return b }
func (b *recBuilder) named(n string) *recBuilder       { b.Name = n; return b }
func (b *recBuilder) obj() Record                      { return b.Record }

func TestWriteHeader(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != header+"\n" {
		t.Fatalf("empty history = %q, want the header %q", got, header)
	}
	if !strings.HasPrefix(header, "submit_time,duration_s,pods,gpus_per_pod,queue,namespace,mode,min_pods,max_pods,checkpointable,") {
		t.Fatal("the replay's ten columns must come first, in their order")
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	start := time.Date(2024, 5, 1, 12, 3, 0, 0, time.UTC)
	recs := []Record{
		aRecord().obj(),
		aRecord().shape(4, 1).ps(2).took(3*time.Hour + 500*time.Millisecond).named("ctr").obj(),
		aRecord().shape(3, 8).elastic(2, 6).mode(ModeCollective).took(200 * 24 * time.Hour).obj(),
		func() Record {
			r := aRecord().named(`odd, "quoted" name`).obj()
			r.Checkpointable, r.Start, r.Phase, r.Restarts, r.TimesFrom = true, start, "Failed", 2, TimesFromMixed
			// Nanoseconds survive: the writer prints decimals exactly.
			r.Duration = 200*24*time.Hour + time.Nanosecond
			return r
		}(),
	}
	var buf bytes.Buffer
	if err := Write(&buf, recs); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatalf("reading what Write wrote: %v\n%s", err, buf.String())
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, recs)
	}
}

func TestWriteRefusesInvalidRecords(t *testing.T) {
	philly := Record{SubmitTime: time.Unix(1, 0), Duration: time.Second, GPUs: 8, Queue: "vc"}
	for _, tc := range []struct {
		name string
		rec  Record
		want string // in the error
	}{
		{"no shape", philly, "unknown pod shape"},
		{"no queue", func() Record { r := aRecord().obj(); r.Queue = ""; return r }(), "column queue"},
		{"zero duration", aRecord().took(0).obj(), "column duration_s"},
		{"min above pods", aRecord().elastic(3, 4).obj(), "column min_pods"},
		{"pservers of a collective job", func() Record { r := aRecord().mode(ModeCollective).obj(); r.PServers = 1; return r }(), "column pservers"},
		{"unknown mode", aRecord().mode("heter-ps").obj(), "column mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(&buf, []Record{aRecord().obj(), tc.rec})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "record 2") {
				t.Fatalf("Write = %v, want an error naming record 2 and %q", err, tc.want)
			}
		})
	}
}

func TestReadHistory(t *testing.T) {
	submit := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   string
		want []Record
	}{
		{
			name: "the five required columns only: defaults for the others",
			in:   "submit_time,duration_s,pods,gpus_per_pod,queue\n2024-05-01T12:00:00Z,90,2,4,q1\n",
			want: []Record{{SubmitTime: submit, Duration: 90 * time.Second, Pods: 2, GPUsPerPod: 4, MinPods: 2, MaxPods: 2, Queue: "q1"}},
		},
		{
			name: "columns in any order, case and spaces, unknown ones ignored",
			in:   " Queue ,owner,GPUS_PER_POD,pods,duration_s,submit_time,mode\nq1,alice,4,2,1.5,2024-05-01T14:00:00+02:00,PS\n",
			want: []Record{{SubmitTime: submit, Duration: 1500 * time.Millisecond, Pods: 2, GPUsPerPod: 4, MinPods: 2, MaxPods: 2, Queue: "q1", Mode: ModePS}},
		},
		{
			name: "empty optional values take their defaults",
			in:   header + "\n2024-05-01T12:00:00Z,60,3,1,q,,,,,,,,,,,\n",
			want: []Record{{SubmitTime: submit, Duration: time.Minute, Pods: 3, GPUsPerPod: 1, MinPods: 3, MaxPods: 3, Queue: "q"}},
		},
		{
			name: "a byte order mark before the header, CRLF lines, a float duration",
			in:   "\ufeffsubmit_time,duration_s,pods,gpus_per_pod,queue,min_pods,max_pods\r\n2024-05-01T12:00:00Z,1e3,2,8,q,1,4\r\n",
			want: []Record{{SubmitTime: submit, Duration: 1000 * time.Second, Pods: 2, GPUsPerPod: 8, MinPods: 1, MaxPods: 4, Queue: "q"}},
		},
		{
			name: "header only",
			in:   header + "\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Bad input is refused with the line, the column and the fix.
func TestReadRefusesBadRows(t *testing.T) {
	const h = "submit_time,duration_s,pods,gpus_per_pod,queue,mode,min_pods,max_pods,checkpointable,pservers,restarts\n"
	const good = "2024-05-01T12:00:00Z,90,2,4,q,,,,,,\n"
	for _, tc := range []struct {
		name, in string
		want     []string // all in the error
	}{
		{"empty input", "", []string{"empty", "submit_time,duration_s"}},
		{"neither format", "a,b,c\n1,2,3\n", []string{"line 1", "neither", "paddle-replay export"}},
		{"missing required column", "submit_time,duration_s,pods,gpus_per_pod\n", []string{"line 1", "lacks column queue"}},
		{"duplicate column", "submit_time,duration_s,pods,pods,gpus_per_pod,queue\n", []string{"line 1", "pods is in the header twice"}},
		{"not a time", h + good + "2024-05-01 12:00,90,2,4,q,,,,,,\n", []string{"line 3", "column submit_time", "RFC 3339", "2024-05-01T12:00:00Z"}},
		{"zero duration", h + "2024-05-01T12:00:00Z,0,2,4,q,,,,,,\n", []string{"line 2", "column duration_s", "above 0"}},
		{"negative duration", h + "2024-05-01T12:00:00Z,-5,2,4,q,,,,,,\n", []string{"line 2", "column duration_s"}},
		{"NaN duration", h + "2024-05-01T12:00:00Z,NaN,2,4,q,,,,,,\n", []string{"line 2", "column duration_s"}},
		{"huge duration", h + "2024-05-01T12:00:00Z,1e300,2,4,q,,,,,,\n", []string{"line 2", "column duration_s"}},
		{"no pods", h + "2024-05-01T12:00:00Z,90,,4,q,,,,,,\n", []string{"line 2", "column pods", "is empty", "at least 1"}},
		{"pods not a number", h + "2024-05-01T12:00:00Z,90,two,4,q,,,,,,\n", []string{"line 2", "column pods", "whole number"}},
		{"too many pods", h + "2024-05-01T12:00:00Z,90,99999999999,4,q,,,,,,\n", []string{"line 2", "column pods"}},
		{"no GPUs", h + "2024-05-01T12:00:00Z,90,2,0,q,,,,,,\n", []string{"line 2", "column gpus_per_pod", "at least 1"}},
		{"empty queue", h + "2024-05-01T12:00:00Z,90,2,4,,,,,,,\n", []string{"line 2", "column queue", "default"}},
		{"bad mode", h + "2024-05-01T12:00:00Z,90,2,4,q,mpi,,,,,\n", []string{"line 2", "column mode", "collective, ps"}},
		{"min above pods", h + "2024-05-01T12:00:00Z,90,2,4,q,,3,4,,,\n", []string{"line 2", "column min_pods", "1 <= min_pods <= pods <= max_pods"}},
		{"max below pods", h + "2024-05-01T12:00:00Z,90,2,4,q,,1,1,,,\n", []string{"line 2", "column max_pods"}},
		{"bad bool", h + "2024-05-01T12:00:00Z,90,2,4,q,,,,maybe,,\n", []string{"line 2", "column checkpointable", "true or false"}},
		{"pservers without ps", h + "2024-05-01T12:00:00Z,90,2,4,q,collective,,,,2,\n", []string{"line 2", "column pservers"}},
		{"negative restarts", h + "2024-05-01T12:00:00Z,90,2,4,q,,,,,,-1\n", []string{"line 2", "column restarts"}},
		{"short row", h + "2024-05-01T12:00:00Z,90,2,4,q\n", []string{"line 2", "number of fields"}},
		{"bad quoting", h + "2024-05-01T12:00:00Z,90,2,4,\"q\"x,,,,,,\n", []string{"line 2", "quote"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in))
			if err == nil {
				t.Fatal("Read accepted it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// A line without end is refused once it passes the bound, without being
// read whole: the reader stops within a few buffers of it.
func TestReadBoundsLineLength(t *testing.T) {
	src := &endlessField{prefix: []byte(header + "\n2024-05-01T12:00:00Z,90,2,4,q,,,,,,,,,,,")}
	_, err := Read(src)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("Read = %v, want line 2 refused as too long", err)
	}
	if src.served > 2*maxLineBytes {
		t.Errorf("read %d bytes of an endless line, want it stopped near %d", src.served, maxLineBytes)
	}
}

// endlessField is a header, a row's start, then one field that never ends.
type endlessField struct {
	prefix []byte
	served int
}

func (e *endlessField) Read(p []byte) (int, error) {
	n := 0
	if e.served < len(e.prefix) {
		n = copy(p, e.prefix[e.served:])
	}
	for ; n < len(p); n++ {
		p[n] = 'x'
	}
	e.served += n
	return n, nil
}

// Next streams: the records come one by one, and an error stops the file
// at its line with the records before it already returned.
func TestReaderStreams(t *testing.T) {
	in := "submit_time,duration_s,pods,gpus_per_pod,queue\n" +
		"2024-05-01T12:00:00Z,1,1,1,q\n" +
		"2024-05-01T12:00:00Z,2,1,1,q\n" +
		"2024-05-01T12:00:00Z,x,1,1,q\n"
	rd, err := NewReader(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if rd.Format() != FormatHistory {
		t.Fatalf("format %s", rd.Format())
	}
	for i := 1; i <= 2; i++ {
		r, err := rd.Next()
		if err != nil || r.Duration != time.Duration(i)*time.Second {
			t.Fatalf("record %d = %+v, %v", i, r, err)
		}
	}
	_, err = rd.Next()
	var re *RowError
	var fe *FieldError
	if !errors.As(err, &re) || re.Line != 4 || !errors.As(err, &fe) || fe.Column != colDuration {
		t.Fatalf("third row: %v, want a RowError of line 4 and a FieldError of duration_s", err)
	}
}

func TestReadPhillyRows(t *testing.T) {
	in := "timestamp,duration,num_gpus,gpu_time,cluster\n" +
		"2017-10-09 07:01:55,66.0,1,66.0,11cb48\n" +
		"2017-10-03 20:15:43,0.0,1,0.0,6214e9\n" + // no run time: skipped
		"2017-10-03 20:15:43,120,0,0.0,6214e9\n" + // no GPU: skipped
		"not a time,120,1,120,6214e9\n" + // skipped
		"2017-10-03 20:15:43,1200.5,16,19208,b436b2\n"
	rd, err := NewReader(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if rd.Format() != FormatPhilly {
		t.Fatalf("format %s, want philly", rd.Format())
	}
	var got []Record
	for {
		r, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := []Record{
		{SubmitTime: time.Date(2017, 10, 9, 7, 1, 55, 0, time.UTC), Duration: 66 * time.Second, GPUs: 1, Queue: "11cb48", Namespace: "11cb48"},
		{SubmitTime: time.Date(2017, 10, 3, 20, 15, 43, 0, time.UTC), Duration: 1200500 * time.Millisecond, GPUs: 16, Queue: "b436b2", Namespace: "b436b2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if rd.Skipped() != 3 {
		t.Errorf("skipped %d rows, want 3", rd.Skipped())
	}
	if got[1].Shaped() || got[1].TotalGPUs() != 16 {
		t.Errorf("a Philly row has no pod shape and its GPUs in total: %+v", got[1])
	}
}

// phillyTrace is the Philly trace the benchmarks replay, as the repository
// carries it (the Pollux artifact's philly.csv, bench/quality/testdata).
var phillyTrace = filepath.Join("..", "..", "bench", "quality", "testdata", "pollux", "philly.csv")

// The whole trace reads, row for row as the bench's loader keeps them
// (bench/quality: LoadPhilly keeps all of its 82,247 rows).
func TestReadPhillyTrace(t *testing.T) {
	f, err := os.Open(phillyTrace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	n, gpus := 0, 0
	var first, last time.Time
	for {
		r, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Shaped() || r.GPUs < 1 || r.Duration <= 0 || r.Queue == "" || r.Queue != r.Namespace {
			t.Fatalf("row %d: %+v", n+2, r)
		}
		if first.IsZero() || r.SubmitTime.Before(first) {
			first = r.SubmitTime
		}
		if r.SubmitTime.After(last) {
			last = r.SubmitTime
		}
		n++
		gpus += r.GPUs
	}
	if n != 82247 || rd.Skipped() != 0 {
		t.Errorf("%d records and %d skipped, want 82247 and 0", n, rd.Skipped())
	}
	// The trace spans September to December 2017.
	if first.Year() != 2017 || last.Year() != 2017 || !last.After(first.Add(60*24*time.Hour)) {
		t.Errorf("submissions from %s to %s", first, last)
	}
	t.Logf("%d jobs, %d GPUs, submitted %s .. %s", n, gpus, first, last)
}
