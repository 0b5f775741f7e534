package jobhistory

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// The history format's columns. The first ten are the replay's; Read
// needs the first five and fills the others' defaults when they are
// absent (or empty in a row).
const (
	colSubmitTime     = "submit_time"
	colDuration       = "duration_s"
	colPods           = "pods"
	colGPUsPerPod     = "gpus_per_pod"
	colQueue          = "queue"
	colNamespace      = "namespace"
	colMode           = "mode"
	colMinPods        = "min_pods"
	colMaxPods        = "max_pods"
	colCheckpointable = "checkpointable"
	colPServers       = "pservers"
	colStartTime      = "start_time"
	colPhase          = "phase"
	colRestarts       = "restarts"
	colTimesFrom      = "times_from"
	colName           = "name"
)

// Columns is the header Write writes, in order.
var Columns = []string{
	colSubmitTime, colDuration, colPods, colGPUsPerPod, colQueue,
	colNamespace, colMode, colMinPods, colMaxPods, colCheckpointable,
	colPServers, colStartTime, colPhase, colRestarts, colTimesFrom, colName,
}

// requiredColumns are the columns a history file must have.
var requiredColumns = []string{colSubmitTime, colDuration, colPods, colGPUsPerPod, colQueue}

// The columns of Microsoft's Philly trace as the Pollux artifact ships it
// (philly.csv: timestamp,duration,num_gpus,gpu_time,cluster), which Read
// takes as well; gpu_time (duration x GPUs) is not read.
const (
	phillyTimestamp = "timestamp"
	phillyDuration  = "duration"
	phillyGPUs      = "num_gpus"
	phillyCluster   = "cluster"
	// phillyTimeLayout is the layout of its timestamps, which are UTC.
	phillyTimeLayout = "2006-01-02 15:04:05"
)

var phillyColumns = []string{phillyTimestamp, phillyDuration, phillyGPUs, phillyCluster}

// Format is the kind of file a Reader reads.
type Format string

const (
	// FormatHistory is this package's format (Columns).
	FormatHistory Format = "history"
	// FormatPhilly is Microsoft's Philly trace: job sizes without pod
	// shapes (Record.GPUs), the virtual cluster as queue and namespace.
	FormatPhilly Format = "philly"
)

// maxLineBytes bounds one line of input, so that a file without line
// breaks (or a binary one) is refused instead of read whole into memory:
// a history row is about 150 bytes, a header 200.
const maxLineBytes = 1 << 20

// Writer writes records in the history format, one at a time: the header
// first, then one row per Write. Call Flush at the end.
type Writer struct {
	cw      *csv.Writer
	header  bool
	written int
	row     []string
}

// NewWriter writes to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{cw: csv.NewWriter(w), row: make([]string, len(Columns))}
}

// Write writes one record, refused with the column and the fix when it
// is not valid (Record.Validate).
func (w *Writer) Write(r Record) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("record %d (%s): %w", w.written+1, recordName(r), err)
	}
	if err := w.writeHeader(); err != nil {
		return err
	}
	row := w.row
	row[0] = r.SubmitTime.UTC().Format(time.RFC3339Nano)
	row[1] = formatSeconds(r.Duration)
	row[2] = strconv.Itoa(r.Pods)
	row[3] = strconv.Itoa(r.GPUsPerPod)
	row[4] = r.Queue
	row[5] = r.Namespace
	row[6] = string(r.Mode)
	row[7] = strconv.Itoa(r.MinPods)
	row[8] = strconv.Itoa(r.MaxPods)
	row[9] = strconv.FormatBool(r.Checkpointable)
	row[10] = strconv.Itoa(r.PServers)
	row[11] = ""
	if !r.Start.IsZero() {
		row[11] = r.Start.UTC().Format(time.RFC3339Nano)
	}
	row[12] = r.Phase
	row[13] = strconv.Itoa(r.Restarts)
	row[14] = string(r.TimesFrom)
	row[15] = r.Name
	w.written++
	return w.cw.Write(row)
}

func (w *Writer) writeHeader() error {
	if w.header {
		return nil
	}
	w.header = true
	return w.cw.Write(Columns)
}

// Flush writes the header if no record came, and everything buffered.
func (w *Writer) Flush() error {
	if err := w.writeHeader(); err != nil {
		return err
	}
	w.cw.Flush()
	return w.cw.Error()
}

// Write writes the header and records to w.
func Write(w io.Writer, records []Record) error {
	cw := NewWriter(w)
	for _, r := range records {
		if err := cw.Write(r); err != nil {
			return err
		}
	}
	return cw.Flush()
}

func recordName(r Record) string {
	switch {
	case r.Name != "" && r.Namespace != "":
		return r.Namespace + "/" + r.Name
	case r.Name != "":
		return r.Name
	}
	return "submitted " + r.SubmitTime.UTC().Format(time.RFC3339)
}

// Reader reads records one row at a time from a history file or a Philly
// trace, told apart by their headers.
type Reader struct {
	cr     *csv.Reader
	format Format
	// col is each known column's index in a row, -1 when absent.
	col     map[string]int
	skipped int
}

// RowError is a row Read refuses: its line, then the column, the value
// and the fix (a *FieldError), or what is wrong with the line as a whole.
type RowError struct {
	Line int
	Err  error
}

func (e *RowError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *RowError) Unwrap() error { return e.Err }

// NewReader reads the header from r and returns a Reader of its rows.
func NewReader(r io.Reader) (*Reader, error) {
	cr := csv.NewReader(&lineLimiter{r: r, line: 1})
	cr.ReuseRecord = true
	cr.FieldsPerRecord = 0 // every row has as many fields as the header
	header, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("the input is empty: a history file starts with the header line " + strings.Join(Columns, ","))
	}
	if err != nil {
		return nil, readError(err)
	}
	rd := &Reader{cr: cr, col: map[string]int{}}
	seen := map[string]int{}
	for i, h := range header {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff") // a byte order mark, as spreadsheets save UTF-8 CSV
		}
		h = strings.ToLower(strings.TrimSpace(h))
		if j, dup := seen[h]; dup && h != "" {
			return nil, &RowError{Line: 1, Err: fmt.Errorf("column %s is in the header twice (fields %d and %d); keep one", h, j+1, i+1)}
		}
		seen[h] = i
	}
	var known []string
	switch {
	case has(seen, colSubmitTime):
		rd.format, known = FormatHistory, Columns
		if missing := absent(seen, requiredColumns); len(missing) > 0 {
			return nil, &RowError{Line: 1, Err: fmt.Errorf("the header lacks column %s; a history file needs %s (paddle-replay export writes them all)",
				strings.Join(missing, ", "), strings.Join(requiredColumns, ","))}
		}
	case has(seen, phillyTimestamp) && has(seen, phillyGPUs):
		rd.format, known = FormatPhilly, phillyColumns
		if missing := absent(seen, phillyColumns); len(missing) > 0 {
			return nil, &RowError{Line: 1, Err: fmt.Errorf("the header looks like a Philly trace but lacks column %s; a Philly trace has timestamp,duration,num_gpus,gpu_time,cluster",
				strings.Join(missing, ", "))}
		}
	default:
		return nil, &RowError{Line: 1, Err: fmt.Errorf("header %q is neither a history file's (%s, ...) nor a Philly trace's (timestamp,duration,num_gpus,gpu_time,cluster); paddle-replay export writes the first",
			strings.Join(header, ","), strings.Join(requiredColumns, ","))}
	}
	for _, c := range known {
		rd.col[c] = -1
		if i, ok := seen[c]; ok {
			rd.col[c] = i
		}
	}
	return rd, nil
}

func has(seen map[string]int, col string) bool { _, ok := seen[col]; return ok }

func absent(seen map[string]int, cols []string) []string {
	var out []string
	for _, c := range cols {
		if !has(seen, c) {
			out = append(out, c)
		}
	}
	return out
}

// Format is the kind of file being read.
func (r *Reader) Format() Format { return r.format }

// Skipped is the number of Philly rows skipped so far: those with no GPU,
// no positive duration, or a field that does not parse, as the bench's
// loader skips them (bench/quality: LoadPhilly). A history file's bad rows
// are errors instead.
func (r *Reader) Skipped() int { return r.skipped }

// Next returns the next record, io.EOF after the last.
func (r *Reader) Next() (Record, error) {
	for {
		row, err := r.cr.Read()
		if err != nil {
			if err == io.EOF {
				return Record{}, io.EOF
			}
			return Record{}, readError(err)
		}
		line, _ := r.cr.FieldPos(0)
		if r.format == FormatPhilly {
			rec, ok := r.philly(row)
			if !ok {
				r.skipped++
				continue
			}
			return rec, nil
		}
		rec, err := r.history(row)
		if err != nil {
			return Record{}, &RowError{Line: line, Err: err}
		}
		return rec, nil
	}
}

// Read reads a whole history file or Philly trace.
func Read(r io.Reader) ([]Record, error) {
	rd, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	var out []Record
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
}

// field is the trimmed value of col in row, "" when the column is absent.
func (r *Reader) field(row []string, col string) string {
	i := r.col[col]
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(row[i])
}

// history parses one row of a history file.
func (r *Reader) history(row []string) (Record, error) {
	var rec Record
	var err error
	f := func(col string) string { return r.field(row, col) }
	if rec.SubmitTime, err = parseTime(colSubmitTime, f(colSubmitTime), true); err != nil {
		return rec, err
	}
	if rec.Duration, err = parseDuration(colDuration, f(colDuration)); err != nil {
		return rec, err
	}
	if rec.Pods, err = parseInt(colPods, f(colPods), -1); err != nil {
		return rec, err
	}
	if rec.GPUsPerPod, err = parseInt(colGPUsPerPod, f(colGPUsPerPod), -1); err != nil {
		return rec, err
	}
	rec.Queue = f(colQueue)
	rec.Namespace = f(colNamespace)
	rec.Mode = Mode(strings.ToLower(f(colMode)))
	if rec.MinPods, err = parseInt(colMinPods, f(colMinPods), rec.Pods); err != nil {
		return rec, err
	}
	if rec.MaxPods, err = parseInt(colMaxPods, f(colMaxPods), rec.Pods); err != nil {
		return rec, err
	}
	if v := f(colCheckpointable); v != "" {
		if rec.Checkpointable, err = strconv.ParseBool(v); err != nil {
			return rec, fieldErr(colCheckpointable, v, "is not true or false")
		}
	}
	if rec.PServers, err = parseInt(colPServers, f(colPServers), 0); err != nil {
		return rec, err
	}
	if rec.Start, err = parseTime(colStartTime, f(colStartTime), false); err != nil {
		return rec, err
	}
	rec.Phase = f(colPhase)
	if rec.Restarts, err = parseInt(colRestarts, f(colRestarts), 0); err != nil {
		return rec, err
	}
	rec.TimesFrom = TimesFrom(strings.ToLower(f(colTimesFrom)))
	rec.Name = f(colName)
	return rec, rec.Validate()
}

// philly maps one Philly row; ok is false for a row to skip.
func (r *Reader) philly(row []string) (rec Record, ok bool) {
	ts, err := time.Parse(phillyTimeLayout, r.field(row, phillyTimestamp))
	if err != nil {
		return rec, false
	}
	d, err := strconv.ParseFloat(r.field(row, phillyDuration), 64)
	if err != nil || !(d > 0) || d > maxDurationSec {
		return rec, false
	}
	g, err := strconv.Atoi(r.field(row, phillyGPUs))
	if err != nil || g < 1 || g > maxPods*maxGPUsPerPod {
		return rec, false
	}
	cluster := r.field(row, phillyCluster)
	return Record{
		SubmitTime: ts, Duration: secondsToDuration(d), GPUs: g,
		Queue: cluster, Namespace: cluster,
	}, true
}

// parseTime reads an RFC 3339 time; an empty value is the zero time
// unless required.
func parseTime(col, v string, required bool) (time.Time, error) {
	if v == "" {
		if required {
			return time.Time{}, fieldErr(col, v, "is empty")
		}
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fieldErr(col, v, "is not an RFC 3339 time")
	}
	return t.UTC(), nil
}

// parseDuration reads seconds: a decimal number, exact to the nanosecond
// (digits[.digits]), or any float strconv reads (1e3).
func parseDuration(col, v string) (time.Duration, error) {
	if d, ok := parseDecimalSeconds(v); ok {
		if d <= 0 || d > maxDurationSec*time.Second {
			return 0, fieldErr(col, v, fmt.Sprintf("is not in (0, %d]", maxDurationSec))
		}
		return d, nil
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(s) {
		return 0, fieldErr(col, v, "is not a number of seconds")
	}
	if !(s > 0) || s > maxDurationSec {
		return 0, fieldErr(col, v, fmt.Sprintf("is not in (0, %d]", maxDurationSec))
	}
	return secondsToDuration(s), nil
}

// parseDecimalSeconds reads digits[.digits] exactly, rounding below the
// nanosecond; ok is false for anything else (or too many digits).
func parseDecimalSeconds(v string) (time.Duration, bool) {
	whole, frac, _ := strings.Cut(v, ".")
	if whole == "" || len(whole) > 11 || !digits(whole) || !digits(frac) {
		return 0, false
	}
	sec, _ := strconv.ParseInt(whole, 10, 64)
	var ns int64
	for i := 0; i < 9; i++ {
		ns *= 10
		if i < len(frac) {
			ns += int64(frac[i] - '0')
		}
	}
	if len(frac) > 9 && frac[9] >= '5' {
		ns++
	}
	return time.Duration(sec)*time.Second + time.Duration(ns), true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseInt reads a whole number; an empty value is def, or an error when
// def is negative (the column needs a value). Ranges are Validate's.
func parseInt(col, v string, def int) (int, error) {
	if v == "" {
		if def < 0 {
			return 0, fieldErr(col, v, "is empty")
		}
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, fieldErr(col, v, "is not a whole number")
	}
	return n, nil
}

// fmtFloat writes f as short as it reads back.
func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// readError says what the csv package found, with its line.
func readError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return &RowError{Line: pe.Line, Err: errors.New("the row has a different number of fields than the header; write one field per header column (empty for an unknown optional value)")}
		}
		return &RowError{Line: pe.Line, Err: fmt.Errorf("%v (column %d); quote fields that hold commas or quotes, as RFC 4180 says", pe.Err, pe.Column)}
	}
	var le *lineTooLong
	if errors.As(err, &le) {
		return &RowError{Line: le.line, Err: fmt.Errorf("the line is longer than %d bytes; a history row is one line of about 150 bytes: is this a CSV file?", maxLineBytes)}
	}
	return err
}

// lineLimiter passes r through and fails once a line grows past
// maxLineBytes, so that the csv reader never holds more than that.
type lineLimiter struct {
	r    io.Reader
	run  int // bytes since the last line break
	line int
}

type lineTooLong struct{ line int }

func (e *lineTooLong) Error() string {
	return fmt.Sprintf("line %d is longer than %d bytes", e.line, maxLineBytes)
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for i := 0; i < n; i++ {
		if p[i] == '\n' {
			l.run = 0
			l.line++
			continue
		}
		l.run++
		if l.run > maxLineBytes {
			return i, &lineTooLong{line: l.line}
		}
	}
	return n, err
}

// All reads every record left, in file order.
func (r *Reader) All() ([]Record, error) {
	var out []Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
}
