package workspace

// UnlockedGC turns o into the mutant the GC tests must catch: bodies are
// deleted from the first scan's view, without the per-body lock and the
// re-check under it.
func UnlockedGC(o *GCOptions) *GCOptions { o.unlocked = true; return o }
