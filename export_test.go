package hybridctx

import "context"

// NoticeTokensOf exposes Policy.noticeTokens to the external tests, which
// can count with tokenizer/bpe (a package that imports this one).
func NoticeTokensOf(p Policy, head []byte, size int64) int64 { return p.noticeTokens(head, size) }

// HoldQuerySlot takes one slot of l until release, as a running query
// does.
func HoldQuerySlot(l *QueryLimiter) (release func()) {
	release, err := l.acquire(context.Background())
	if err != nil {
		panic(err)
	}
	return release
}
