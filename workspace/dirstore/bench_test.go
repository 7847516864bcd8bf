package dirstore_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var benchSizes = []struct {
	name string
	size int
}{{"4KiB", 4 << 10}, {"32KiB", 32 << 10}, {"1MiB", 1 << 20}}

// benchContent returns a random buffer, and a function that makes it (and a
// key for it) fresh for iteration i. Keys are unique hex names rather than
// digests: hashing is the Store's job, and both benchmarks measure only the
// file-system work.
func benchContent(size int) ([]byte, func(i int) string) {
	buf := make([]byte, size)
	_, _ = rand.Read(buf)
	var salt [24]byte
	_, _ = rand.Read(salt[:])
	return buf, func(i int) string {
		binary.LittleEndian.PutUint64(buf, uint64(i))
		var k [32]byte
		copy(k[:], salt[:])
		binary.BigEndian.PutUint64(k[24:], uint64(i))
		return hex.EncodeToString(k[:])
	}
}

// BenchmarkDurableCreate measures NewWriter + Write + Commit (create-only)
// of fresh content: temp file, fsync, chmod, link, directory fsync, unlink.
func BenchmarkDurableCreate(b *testing.B) {
	for _, bs := range benchSizes {
		b.Run(bs.name, func(b *testing.B) {
			s := openNew(b)
			ctx := context.Background()
			buf, next := benchContent(bs.size)
			b.SetBytes(int64(bs.size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				key := next(i)
				i++
				w, err := s.NewWriter(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := w.Write(buf); err != nil {
					b.Fatal(err)
				}
				if err := w.Commit(ctx, key, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBareCreate does the same durable steps with plain os calls in the
// same directory, without os.Root, key checks or the chmod: the floor the
// Store is compared against.
func BenchmarkBareCreate(b *testing.B) {
	for _, bs := range benchSizes {
		b.Run(bs.name, func(b *testing.B) { bareCreate(b, bs.size) })
	}
}

// bareCreate runs the bare durable create of size fresh bytes per iteration.
func bareCreate(b *testing.B, size int) {
	create := newBare(b)
	buf, next := benchContent(size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		create(next(i), buf, i)
		i++
	}
}

// newBare returns a bare durable create into the body directory of a new
// workspace: buf under key, through temporary file number i.
func newBare(b *testing.B) func(key string, buf []byte, i int) {
	s := openNew(b)
	dir := filepath.Join(s.Dir(), "sha256")
	return func(key string, buf []byte, i int) {
		tmp := filepath.Join(dir, fmt.Sprintf(".tmp-bare-%d", i))
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.Link(tmp, filepath.Join(dir, key)); err != nil {
			b.Fatal(err)
		}
		d, err := os.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			b.Fatal(err)
		}
		_ = d.Close()
		if err := os.Remove(tmp); err != nil {
			b.Fatal(err)
		}
	}
}
