package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
)

// TestVerifyExactDamageAtScale stores 10,000 bodies, damages 1% of them in
// five ways (bit flip, truncate, extend, swap of two, replacement by a
// symbolic link), and adds records whose bodies are absent: verify reports
// exactly the damaged and missing sets (no false positive, no false
// negative); --repair deletes exactly the damaged bodies; offloading the same
// contents again restores them and verify is clean.
func TestVerifyExactDamageAtScale(t *testing.T) {
	skipUnlessLong(t)
	const n = 10_000
	ws := filepath.Join(memDir(t), "ws")
	rng := rand.New(rand.NewPCG(42, 1))
	f := newScaleFixture(t, ws, n, rng)
	damaged, clean, content, path := f.damaged, f.clean, scaleContent, f.path
	wantCorrupt, wantUnsafe := f.damage(t, rng)
	var wantMissing []string
	for i := n; i < n+5; i++ {
		wantMissing = append(wantMissing, artifact.RefOf(content(i)).String())
	}
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

	code, rep := verifyJSON(t, ws)
	if code != ExitDamage {
		t.Fatalf("verify exit %d, want %d", code, ExitDamage)
	}
	if !slices.Equal(sorted(rep.Corrupt), sorted(wantCorrupt)) {
		fp, fn := diff(rep.Corrupt, wantCorrupt)
		t.Fatalf("corrupt: %d reported, %d injected; false positives %v, false negatives %v",
			len(rep.Corrupt), len(wantCorrupt), fp, fn)
	}
	if !slices.Equal(sorted(rep.Missing), sorted(wantMissing)) {
		t.Fatalf("missing = %v, want %v", rep.Missing, wantMissing)
	}
	if !slices.Equal(sorted(rep.UnsafePermissions), sorted(wantUnsafe)) {
		t.Fatalf("unsafe_permissions = %v, want %v", rep.UnsafePermissions, wantUnsafe)
	}
	if rep.Bodies != n || rep.Orphaned != n-50 || rep.Repaired != 0 {
		t.Fatalf("bodies %d, orphaned %d, repaired %d", rep.Bodies, rep.Orphaned, rep.Repaired)
	}

	code, rep = verifyJSON(t, ws, "--repair")
	if code != ExitDamage || rep.Repaired != 100 || len(rep.Corrupt) != 100 {
		t.Fatalf("verify --repair: exit %d, repaired %d, corrupt %d", code, rep.Repaired, len(rep.Corrupt))
	}
	for _, i := range damaged {
		if _, err := os.Lstat(path(i)); err == nil {
			t.Fatalf("a damaged body survived the repair")
		}
	}
	for _, i := range clean[:200] {
		if _, err := os.Lstat(path(i)); err != nil {
			t.Fatalf("the repair deleted a clean body: %v", err)
		}
	}
	// Now the damaged bodies with records are missing too.
	code, rep = verifyJSON(t, ws)
	if code != ExitDamage || len(rep.Corrupt) != 0 || len(rep.Missing) != 25 || len(rep.UnsafePermissions) != 0 {
		t.Fatalf("after repair: exit %d, %+v", code, rep)
	}
	// Offloading the same contents restores them.
	for _, i := range append(slices.Clone(damaged[:20]), n, n+1, n+2, n+3, n+4) {
		if ref := offloadRef(t, ws, content(i)); ref != artifact.RefOf(content(i)) {
			t.Fatal("re-offload gave another reference")
		}
	}
	if code, rep = verifyJSON(t, ws); code != ExitOK || len(rep.Missing) != 0 || len(rep.Corrupt) != 0 {
		t.Fatalf("after re-offload: exit %d, %+v", code, rep)
	}
	t.Logf("%d bodies, %d damaged (5 kinds), %d missing: reported exactly", n, len(wantCorrupt), len(wantMissing))
}

// scaleFixture is a directory workspace of n small bodies, a random 100 of
// them chosen for damage, with records of 20 damaged bodies, 30 clean ones
// and 5 contents never stored.
type scaleFixture struct {
	ws             string
	refs           []artifact.Ref
	damaged, clean []int
}

// scaleContent is the content of body i.
func scaleContent(i int) []byte { return fmt.Appendf(nil, "artifact number %05d\n", i) }

func newScaleFixture(t *testing.T, ws string, n int, rng *rand.Rand) *scaleFixture {
	t.Helper()
	ctx := context.Background()
	s, err := dirstore.Open(ctx, ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := &scaleFixture{ws: ws, refs: make([]artifact.Ref, n)}
	for i := range n {
		f.refs[i] = artifact.RefOf(scaleContent(i))
		if err := os.WriteFile(bodyPath(ws, f.refs[i]), scaleContent(i), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	order := rng.Perm(n)
	f.damaged, f.clean = order[:100], order[100:]
	owner := artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}
	record := func(i int) {
		rec := artifact.Record{Owner: owner, Ref: artifact.RefOf(scaleContent(i)), Size: int64(len(scaleContent(i))),
			Kind: "text", Tool: "t", CallID: "c", CreatedAt: time.Now(), LastUsedAt: time.Now()}
		if _, err := s.CreateRecord(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range f.damaged[:20] {
		record(i)
	}
	for _, i := range f.clean[:30] {
		record(i)
	}
	for i := n; i < n+5; i++ {
		record(i)
	}
	return f
}

func (f *scaleFixture) path(i int) string { return bodyPath(f.ws, f.refs[i]) }

// damage damages the chosen bodies in five ways, 20 each (bit flip,
// truncate, extend, swap of two, replacement by a symbolic link), and
// returns the references verify must report corrupt and the paths it must
// report unsafe.
func (f *scaleFixture) damage(t *testing.T, rng *rand.Rand) (wantCorrupt, wantUnsafe []string) {
	t.Helper()
	rewrite := func(i int, b []byte) {
		if err := os.Chmod(f.path(i), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path(i), b, 0o400); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(f.path(i), 0o400)
	}
	for k, i := range f.damaged {
		wantCorrupt = append(wantCorrupt, f.refs[i].String())
		b := scaleContent(i)
		switch k / 20 {
		case 0: // bit flip
			b[rng.IntN(len(b))] ^= 1 << rng.IntN(8)
			rewrite(i, b)
		case 1: // truncate
			rewrite(i, b[:rng.IntN(len(b))])
		case 2: // extend
			rewrite(i, append(b, 'x'))
		case 3: // swap with the next one
			if k%2 == 0 {
				j := f.damaged[k+1]
				tmp := f.path(i) + ".swap"
				for _, r := range [][2]string{{f.path(i), tmp}, {f.path(j), f.path(i)}, {tmp, f.path(j)}} {
					if err := os.Rename(r[0], r[1]); err != nil {
						t.Fatal(err)
					}
				}
			}
		case 4: // symbolic link to a clean body
			if err := os.Remove(f.path(i)); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(f.refs[f.clean[k]].Hex(), f.path(i)); err != nil {
				t.Fatal(err)
			}
			wantUnsafe = append(wantUnsafe, "sha256/"+f.refs[i].Hex())
		}
	}
	return wantCorrupt, wantUnsafe
}

// memDir returns a temporary directory in memory (/dev/shm) when the
// machine has one, else on disk: the test is about what verify reports, not
// about the disk.
func memDir(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "hybridctx-test-"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// diff returns what got has that want lacks, and the reverse.
func diff(got, want []string) (extra, lacking []string) {
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			lacking = append(lacking, w)
		}
	}
	return extra, lacking
}
