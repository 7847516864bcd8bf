package hybridctx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
)

func TestInlineAtAndBelowThreshold(t *testing.T) {
	e := newEnv(t, 100)
	for _, n := range []int{0, 1, 99, 100} {
		s := strings.Repeat("x", n)
		out := mustOffload(t, e.off, e.ctx, s)
		expect(t, out.Outcome(), out.Reason(), hybridctx.Inline, hybridctx.BelowThreshold)
		if out.Text() != s || out.Notice != "" || !out.Ref.IsZero() || string(out.Content()) != s {
			t.Fatalf("n=%d: inline outcome altered the content", n)
		}
	}
	if c := e.inst.Counts(); c.NewWriters+c.Commits+c.GetRecords+c.Stats != 0 {
		t.Fatalf("inline touched the workspace: %+v", c)
	}
	out := mustOffload(t, e.off, e.ctx, strings.Repeat("x", 101))
	expect(t, out.Outcome(), out.Reason(), hybridctx.Offloaded, hybridctx.ThresholdExceeded)
}

func TestInlineCountsUTF8Bytes(t *testing.T) {
	e := newEnv(t, 100)
	s := strings.Repeat("日", 40) // 40 runes, 120 bytes
	out := mustOffload(t, e.off, e.ctx, s)
	expect(t, out.Outcome(), out.Reason(), hybridctx.Offloaded, hybridctx.ThresholdExceeded)
	if n, _ := out.Diagnostics().ObservedBytes(); n != 120 {
		t.Fatalf("observed %d, want 120", n)
	}
	small := mustOffload(t, e.off, e.ctx, "café 😀 test")
	if n, _ := small.Diagnostics().ObservedBytes(); n != 15 {
		t.Fatalf("observed %d, want 15", n)
	}
}

func TestSerialization(t *testing.T) {
	e := newEnv(t, 1)
	type payload struct {
		A int `json:"a"`
	}
	cases := []struct {
		in   any
		want string
	}{
		{"abc", "abc"},
		{[]byte("abc"), "abc"},
		{json.RawMessage(`"abc"`), `"abc"`},
		{payload{A: 12}, `{"a":12}`},
		{[]int{1, 2}, `[1,2]`},
	}
	for _, c := range cases {
		out := mustOffload(t, e.off, e.ctx, c.in)
		if out.Ref != artifact.RefOf([]byte(c.want)) {
			t.Errorf("%T: reference is not the digest of %q", c.in, c.want)
		}
	}
	if out := mustOffload(t, e.off, e.ctx, nil); out.Outcome() != hybridctx.Inline || out.Text() != "" {
		t.Fatalf("nil: %v %q", out.Outcome(), out.Text())
	}
	_, err := e.off.Offload(e.ctx, hybridctx.Call{}, make(chan int))
	if !errors.Is(err, hybridctx.ErrUnserializable) {
		t.Fatalf("channel: %v", err)
	}
	if len(e.events.all()) != len(cases)+1 {
		t.Fatalf("events = %d: an unserializable value must report nothing", len(e.events.all()))
	}
}

func TestOffloadedNotice(t *testing.T) {
	e := newEnv(t, 10)
	cases := []struct {
		name, body, kind string
		lines            int64
	}{
		{"json", `{"rows": [1, 2, 3], "more": "` + strings.Repeat("y", 40) + `"}`, "json", 1},
		{"text", "line one\nline two\nline three", "text", 3},
		{"text ending in LF", "line one\nline two\n", "text", 2},
		{"binary", "\xff\xfe\x00binary-bytes", "binary", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := mustOffload(t, e.off, e.ctx, c.body)
			lines := strings.Split(out.Notice, "\n")
			want := 3
			if c.kind == "json" {
				want = 4
			}
			if len(lines) != want || lines[0] != out.Ref.String() || strings.HasSuffix(out.Notice, "\n") {
				t.Fatalf("notice shape: %q", out.Notice)
			}
			if !strings.HasPrefix(lines[1], itoa(len(c.body))+" bytes, "+itoa64(c.lines)+" lines, "+c.kind) {
				t.Fatalf("line 2 = %q", lines[1])
			}
			ref := out.Ref.String()
			k := itoa(min(len(c.body), 65536))
			line3 := map[string]string{
				"text":   `Search it with search_artifact {"reference": "` + ref + `", "pattern": "<text to find>"} or read its lines with read_artifact {"reference": "` + ref + `", "start_line": 1, "line_count": 100}.`,
				"json":   `Query it with query_artifact {"reference": "` + ref + `", "filter": "<jq filter>"}.`,
				"binary": `Read it with read_artifact {"reference": "` + ref + `", "offset": 0, "length": ` + k + `, "max_bytes": ` + k + `}.`,
			}[c.kind]
			if lines[2] != line3 {
				t.Fatalf("line 3 = %q", lines[2])
			}
			if c.kind == "json" && lines[3] != `shape: {"rows": array[3] of number, "more": string}` {
				t.Fatalf("line 4 = %q", lines[3])
			}
			if out.Text() != out.Notice || out.Content() != nil || out.Segment() != nil {
				t.Fatal("a stored outcome must not keep the content")
			}
			again := mustOffload(t, e.off, e.ctx, c.body)
			if again.Notice != out.Notice {
				t.Fatal("notice is not byte-identical for the same body")
			}
		})
	}
}

func TestNoticeBoundAndToolName(t *testing.T) {
	e := newEnv(t, 1)
	name := strings.Repeat("n", hybridctx.MaxReadToolNameLen)
	off, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 1, ReadToolName: name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("\n\xff"), 1<<19)
	out := mustOffload(t, off, e.ctx, big)
	if len(out.Notice) > hybridctx.MaxNoticeLen || !strings.Contains(out.Notice, "Read it with "+name+" ") {
		t.Fatalf("notice %d bytes: %q", len(out.Notice), out.Notice)
	}
	if !strings.Contains(out.Notice, `"length": 65536, "max_bytes": 65536`) {
		t.Fatalf("read window not capped: %q", out.Notice)
	}
	for _, ok := range []hybridctx.Policy{{InlineThreshold: 100, MaxArtifactBytes: 100}, {InlineThreshold: hybridctx.DefaultMaxArtifactBytes}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("policy %+v refused: %v", ok, err)
		}
	}
	for _, bad := range []string{strings.Repeat("n", 65), "read artifact", "x/y", "é"} {
		if _, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 1, ReadToolName: bad}, nil); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
			t.Errorf("tool name %q accepted", bad)
		}
	}
	for _, p := range []hybridctx.Policy{{}, {InlineThreshold: -1}, {InlineThreshold: 1, MaxArtifactBytes: -1},
		{InlineThreshold: 101, MaxArtifactBytes: 100}, {InlineThreshold: hybridctx.DefaultMaxArtifactBytes + 1}} {
		if _, err := hybridctx.NewOffloader(e.bind, p, nil); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
			t.Errorf("policy %+v accepted", p)
		}
	}
}

func TestExistingReferenceAndReuse(t *testing.T) {
	e := newEnv(t, 8)
	body := strings.Repeat("reuse me ", 20)
	first := mustOffload(t, e.off, e.ctx, body)
	expect(t, first.Outcome(), first.Reason(), hybridctx.Offloaded, hybridctx.ThresholdExceeded)
	before := e.inst.Counts()
	second := mustOffload(t, e.off, e.ctx, []byte(body))
	expect(t, second.Outcome(), second.Reason(), hybridctx.ExistingReference, hybridctx.ExistingContentMatch)
	after := e.inst.Counts()
	if second.Ref != first.Ref || second.Notice != first.Notice {
		t.Fatal("reuse changed the reference or notice")
	}
	if after.NewWriters != before.NewWriters || after.Commits != before.Commits || after.CreateRecords != before.CreateRecords {
		t.Fatalf("reuse wrote: before %+v after %+v", before, after)
	}
	// A different tool and call with the same content maps to the same reference.
	other, err := e.off.Offload(e.ctx, hybridctx.Call{Tool: "other", ID: "c9"}, body)
	if err != nil || other.Ref != first.Ref {
		t.Fatal("same content, different call, different reference")
	}
}

func TestLastUsedTouchedAtMostHourly(t *testing.T) {
	e := newEnv(t, 8)
	body := strings.Repeat("touch ", 20)
	out := mustOffload(t, e.off, e.ctx, body)
	mustOffload(t, e.off, e.ctx, body)
	if c := e.inst.Counts(); c.TouchRecords != 0 {
		t.Fatalf("touched within the hour: %d", c.TouchRecords)
	}
	e.clock.Advance(61 * 60 * 1e9)
	mustOffload(t, e.off, e.ctx, body)
	if c := e.inst.Counts(); c.TouchRecords != 1 {
		t.Fatalf("touches = %d, want 1", c.TouchRecords)
	}
	rec, err := e.store.GetRecord(context.Background(), ownerA, out.Ref)
	if err != nil || !rec.LastUsedAt.After(rec.CreatedAt.Add(60*60*1e9)) {
		t.Fatalf("last used not refreshed: %+v %v", rec, err)
	}
}

func TestNoWorkspaceFails(t *testing.T) {
	e := newEnv(t, 4)
	nobind, err := hybridctx.NewOffloader(nil, hybridctx.Policy{InlineThreshold: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hybridctx.NewBinding(ownerA, nil)
	if err != nil {
		t.Fatal(err)
	}
	nostore, _ := hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: 4}, nil)
	for _, off := range []*hybridctx.Offloader{nobind, nostore} {
		body := []byte("more than four bytes")
		out := mustOffload(t, off, e.ctx, body)
		expect(t, out.Outcome(), out.Reason(), hybridctx.Failed, hybridctx.NoAuthorizedWorkspace)
		if !bytes.Equal(out.Content(), body) {
			t.Fatal("failed outcome lost the content")
		}
		if out.Notice != "hybridctx: failed (no_authorized_workspace), 20 bytes\n"+strings.SplitN(out.Notice, "\n", 2)[1] {
			t.Fatalf("notice = %q", out.Notice)
		}
		if strings.Count(out.Notice, "\n") > 1 {
			t.Fatalf("more than one advice line: %q", out.Notice)
		}
		// Small results still inline without a workspace.
		if s := mustOffload(t, off, e.ctx, "tiny"); s.Outcome() != hybridctx.Inline {
			t.Fatal("small result failed without a workspace")
		}
	}
}

func TestExceedsMaxArtifactSize(t *testing.T) {
	e := newEnv(t, 4)
	off, _ := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 4, MaxArtifactBytes: 10}, nil)
	out := mustOffload(t, off, e.ctx, "eleven byte")
	expect(t, out.Outcome(), out.Reason(), hybridctx.Failed, hybridctx.ExceedsMaxArtifactSize)
	if ok := mustOffload(t, off, e.ctx, "ten bytes!"); ok.Outcome() != hybridctx.Offloaded {
		t.Fatalf("exactly max: %v", ok.Outcome())
	}
	src := strings.NewReader(strings.Repeat("z", 1000))
	rout, err := off.OffloadReader(e.ctx, hybridctx.Call{}, src)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, rout.Outcome(), rout.Reason(), hybridctx.Failed, hybridctx.ExceedsMaxArtifactSize)
	if n, _ := rout.Diagnostics().ObservedBytes(); n < 11 {
		t.Fatalf("observed %d, want at least max+1", n)
	}
	if pos, _ := src.Seek(0, io.SeekCurrent); pos != 0 {
		t.Fatalf("seekable source not rewound: at %d", pos)
	}
	if c := e.inst.Counts(); c.Commits != 1 {
		t.Fatalf("commits = %d: an oversized stream must leave nothing stored", c.Commits)
	}
}

func TestCancelledContextFirst(t *testing.T) {
	e := newEnv(t, 4)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	for _, v := range []any{"x", strings.Repeat("big", 10)} {
		if _, err := e.off.Offload(ctx, hybridctx.Call{}, v); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	}
	if _, err := e.off.OffloadReader(ctx, hybridctx.Call{}, strings.NewReader("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("reader err = %v", err)
	}
	if e.inst.BodyCalls() != 0 || e.inst.Counts().GetRecords != 0 || len(e.events.all()) != 0 {
		t.Fatal("a cancelled context reached the workspace or reported")
	}
}

func TestWriteFailure(t *testing.T) {
	e := newEnv(t, 4)
	e.hooks.Write = func([]byte) error { return errors.New("disk on fire MARKER-ERR") }
	body := []byte("some oversized result")
	out := mustOffload(t, e.off, e.ctx, body)
	expect(t, out.Outcome(), out.Reason(), hybridctx.Failed, hybridctx.WorkspaceWriteFailed)
	if !bytes.Equal(out.Content(), body) || strings.Contains(out.Notice, "MARKER") {
		t.Fatal("write failure lost content or leaked the error")
	}
	if c := e.inst.Counts(); c.Commits != 0 || c.CreateRecords != 0 {
		t.Fatalf("counts %+v", c)
	}
}

func TestReadFailureOnOwnRecord(t *testing.T) {
	e := newEnv(t, 4)
	body := "an oversized result"
	mustOffload(t, e.off, e.ctx, body)
	e.hooks.Open = func(context.Context, string) error { return errors.New("EIO") }
	out := mustOffload(t, e.off, e.ctx, body)
	expect(t, out.Outcome(), out.Reason(), hybridctx.Failed, hybridctx.WorkspaceReadFailed)
	// A new owner whose existing body cannot be read is a write failure.
	offB := e.offloader(t, e.binding(t, ownerB), 4)
	outB := mustOffload(t, offB, e.ctx, body)
	expect(t, outB.Outcome(), outB.Reason(), hybridctx.Failed, hybridctx.WorkspaceWriteFailed)
}

func itoa(n int) string     { return itoa64(int64(n)) }
func itoa64(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestLargeReuseWritesNothing: a byte result seen again, however large,
// costs no body write at all, not even a temporary one (docs/offload.md).
func TestLargeReuseWritesNothing(t *testing.T) {
	e := newEnv(t, 4096)
	big := bytes.Repeat([]byte("a large result repeated by the agent\n"), 200_000) // 7.4 MB
	first := mustOffload(t, e.off, e.ctx, big)
	expect(t, first.Outcome(), first.Reason(), hybridctx.Offloaded, hybridctx.ThresholdExceeded)
	before := e.inst.Counts()
	again := mustOffload(t, e.off, e.ctx, big)
	expect(t, again.Outcome(), again.Reason(), hybridctx.ExistingReference, hybridctx.ExistingContentMatch)
	after := e.inst.Counts()
	if after.NewWriters != before.NewWriters || after.BytesWritten != before.BytesWritten {
		t.Fatalf("reuse wrote %d writers, %d bytes", after.NewWriters-before.NewWriters, after.BytesWritten-before.BytesWritten)
	}
	// Another owner reusing the stored body writes nothing either.
	offB := e.offloader(t, e.binding(t, ownerB), 4096)
	before = e.inst.Counts()
	outB := mustOffload(t, offB, e.ctx, string(big))
	expect(t, outB.Outcome(), outB.Reason(), hybridctx.Offloaded, hybridctx.ThresholdExceeded)
	if after := e.inst.Counts(); after.NewWriters != before.NewWriters {
		t.Fatal("a new owner's reuse of a stored body wrote it again")
	}
}

func TestOverlongCallRefusedBeforeAnyWrite(t *testing.T) {
	e := newEnv(t, 10)
	long := strings.Repeat("x", artifact.MaxCallFieldLen+1)
	big := strings.Repeat("y", 1000)
	for _, call := range []hybridctx.Call{{Tool: long, ID: "c"}, {Tool: "t", ID: long}} {
		if _, err := e.off.Offload(e.ctx, call, big); !errors.Is(err, hybridctx.ErrInvalidCall) {
			t.Fatalf("Offload: %v, want ErrInvalidCall", err)
		}
		r := &countReader{r: strings.NewReader(big)}
		if _, err := e.off.OffloadReader(e.ctx, call, r); !errors.Is(err, hybridctx.ErrInvalidCall) {
			t.Fatalf("OffloadReader: %v, want ErrInvalidCall", err)
		}
		if r.n != 0 {
			t.Fatalf("OffloadReader read %d bytes of a call it refused", r.n)
		}
		if _, err := e.off.Store(e.ctx, call, "small"); !errors.Is(err, hybridctx.ErrInvalidCall) {
			t.Fatalf("Store: %v, want ErrInvalidCall", err)
		}
	}
	if c := e.inst.Counts(); c.NewWriters+c.Commits+c.GetRecords+c.Stats != 0 {
		t.Fatalf("a refused call touched the workspace: %+v", c)
	}
	if n := len(e.events.all()); n != 0 {
		t.Fatalf("%d events for refused calls", n)
	}
	// Exactly the limit is recorded as it is, and reads back.
	limit := strings.Repeat("z", artifact.MaxCallFieldLen)
	out, err := e.off.Offload(e.ctx, hybridctx.Call{Tool: limit, ID: limit}, big)
	if err != nil || out.Outcome() != hybridctx.Offloaded {
		t.Fatalf("at the limit: %v, %v", out, err)
	}
	rec, err := e.store.GetRecord(e.ctx, ownerA, out.Ref)
	if err != nil || rec.Tool != limit || rec.CallID != limit {
		t.Fatalf("record at the limit: %v", err)
	}
	// The workspace itself refuses a longer field, whoever writes.
	rec.Owner, rec.Tool = ownerB, long
	if _, err := e.store.CreateRecord(e.ctx, rec); !errors.Is(err, workspace.ErrCallFieldTooLong) {
		t.Fatalf("CreateRecord with a long tool: %v", err)
	}
}

type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestStreamFailedBeforeWriteReportsBytesRead(t *testing.T) {
	e := newEnv(t, 100)
	e.hooks.NewWriter = func(context.Context) error { return errors.New("read-only file system") }
	in := strings.Repeat("r", 5000)
	out, err := e.off.OffloadReader(e.ctx, hybridctx.Call{Tool: "t", ID: "c"}, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, out.Outcome(), out.Reason(), hybridctx.Failed, hybridctx.WorkspaceWriteFailed)
	obs, _ := out.Diagnostics().ObservedBytes()
	if out.Consumed < 101 || obs < 101 {
		t.Fatalf("consumed %d, observed %d: at least threshold+1 = 101 bytes were read", out.Consumed, obs)
	}
	if strings.Contains(out.Notice, " 0 bytes") {
		t.Fatalf("notice %q says nothing was read", out.Notice)
	}
	ev := e.events.all()
	if len(ev) != 1 {
		t.Fatalf("%d events", len(ev))
	}
	if in, _, _ := ev[0].Diagnostics.Attribution(); in != obs {
		t.Fatalf("event input_bytes %d, observed %d", in, obs)
	}
}
