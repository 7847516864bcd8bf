package mcpproxy

import (
	"bufio"
	"io"
	"runtime"
	"strings"
	"testing"
)

// repeatReader yields a unit repeated count times without holding them.
type repeatReader struct {
	unit  string
	count int
	off   int
}

func (r *repeatReader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) && r.count > 0 {
		k := copy(b[n:], r.unit[r.off:])
		n += k
		if r.off += k; r.off == len(r.unit) {
			r.off, r.count = 0, r.count-1
		}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// allocatedWhile returns the bytes allocated while fn ran.
func allocatedWhile(fn func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLongMessagesMemoryFlat: a 64 MiB structuredContent result, a 64 MiB
// embedded resource blob and a 64 MiB tools/call argument go through the
// proxy (the real streaming length, a directory workspace) allocating a
// small fraction of their size: none is held whole. Not timed.
func TestLongMessagesMemoryFlat(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("three 64 MiB messages; slow under -race (CI runs it without)")
	}
	const size = 64 << 20
	row := `{"i":12345,"s":"` + strings.Repeat("structured row text é ", 40) + `","ok":true},`
	cases := []struct {
		name       string
		head, tail string
		unit       string
	}{
		{"structuredContent", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"rows"}],"structuredContent":{"rows":[`, `{}]}}}`, row},
		{"resource blob", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"resource","resource":{"uri":"file:///b","blob":"`, `"}}]}}`, "QUJDREVGR0g="[:8]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRawRigOn(t, t.TempDir(), 0, func(p *Proxy) { p.tempDir = t.TempDir() })
			r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big"}}`)
			r.upRecv(t)
			var l string
			alloc := allocatedWhile(func() {
				line := io.MultiReader(strings.NewReader(c.head), &repeatReader{unit: c.unit, count: size / len(c.unit)}, strings.NewReader(c.tail+"\n"))
				go func() { _, _ = io.Copy(r.upOut, line) }()
				l, _ = r.fromProxy.ReadString('\n') // no deadline: slow under -race; a hang fails by the test timeout
			})
			if !strings.Contains(l, "artifact://sha256/") || r.proxy.streamed.Load() != 1 {
				t.Fatalf("answer: %.300s", l)
			}
			if alloc > size/8 {
				t.Fatalf("allocated %d MiB for a %d MiB result", alloc>>20, size>>20)
			}
			t.Logf("allocated %.1f MiB for a %d MiB result", float64(alloc)/(1<<20), size>>20)
		})
	}
	t.Run("argument", func(t *testing.T) {
		r := newRawRigOn(t, t.TempDir(), 0, func(p *Proxy) { p.tempDir = t.TempDir() })
		head := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"x":"`
		tail := `"}}}`
		var n int
		alloc := allocatedWhile(func() {
			line := io.MultiReader(strings.NewReader(head), &repeatReader{unit: "argument text ", count: size / 14}, strings.NewReader(tail+"\n"))
			go func() { _, _ = io.Copy(r.toProxy, line) }()
			got, err := r.upIn.ReadSlice('\n')
			for n = len(got); err == bufio.ErrBufferFull; n += len(got) {
				got, err = r.upIn.ReadSlice('\n')
			}
		})
		if want := len(head) + size/14*14 + len(tail) + 1; n != want {
			t.Fatalf("forwarded %d bytes, want %d", n, want)
		}
		if alloc > size/8 {
			t.Fatalf("allocated %d MiB for a %d MiB argument", alloc>>20, size>>20)
		}
		t.Logf("allocated %.1f MiB for a %d MiB argument", float64(alloc)/(1<<20), size>>20)
	})
}
