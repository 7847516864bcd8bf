package hybridctx

// NoticeTokensOf exposes Policy.noticeTokens to the external tests, which
// can count with tokenizer/bpe (a package that imports this one).
func NoticeTokensOf(p Policy, head []byte, size int64) int64 { return p.noticeTokens(head, size) }
