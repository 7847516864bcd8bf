package dirstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
)

// BenchmarkCheckIntegrity measures the database check that verify and gc
// run first, and the index-free reference scan gc confirms candidates with,
// on a database of n records (filled in one transaction).
func BenchmarkCheckIntegrity(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		dir := filepath.Join(b.TempDir(), "ws")
		s := openAt(b, dir)
		db, err := sql.Open("sqlite", filepath.Join(dir, "records.db"))
		if err != nil {
			b.Fatal(err)
		}
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			ref := artifact.RefOf([]byte(fmt.Sprint(i)))
			if _, err := tx.Exec(`INSERT INTO records VALUES (?, 'w', 's', ?, 1, 'text', 't', 'c', 'd', 1, ?)`,
				fmt.Sprint("user-", i%97), ref.Hex(), int64(1+i)); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		_ = db.Close()
		ctx := context.Background()
		b.Run(fmt.Sprint("check/", n), func(b *testing.B) {
			for b.Loop() {
				if d, err := s.CheckIntegrity(ctx); err != nil || len(d) != 0 {
					b.Fatal(d, err)
				}
			}
		})
		b.Run(fmt.Sprint("scan/", n), func(b *testing.B) {
			for b.Loop() {
				k := 0
				for _, err := range s.ScanReferences(ctx) {
					if err != nil {
						b.Fatal(err)
					}
					k++
				}
				if k != n {
					b.Fatalf("%d references, want %d", k, n)
				}
			}
		})
	}
}
