package hybridctx

import (
	"context"
	"errors"
	"io/fs"

	"github.com/hybridctx/hybridctx/artifact"
)

// What a notice in a history is (docs/history.md, "Notices and masks in a
// history").
//
// A tool message may hold any text, a text that starts like a notice
// included: a tool that echoes an earlier notice and goes on, a result of
// two text parts joined, a notice with its size, lines or kind changed. Only
// a text that is byte for byte the notice the owner's record and body render
// under the policy is a notice, whose mask may replace it with nothing
// stored: everything it said is in the body. Any other text is inline and is
// stored before it is masked.

// MaxNoticeCheck is the largest body whose notice a Compactor checks: to
// tell a notice from a text that reads like one it renders the notice
// again from the body (lines, outline and preview need every byte), which
// costs one verified read of the body. The notice of a larger body is
// stored like any inline text before it is masked: lossless, and the mask
// then leads to the notice, which leads to the body.
const MaxNoticeCheck = 64 << 20

// maxNoticeText is the longest text a stored notice can be under p: the
// notice, the preview's introduction and the preview.
func maxNoticeText(p Policy) int64 {
	return MaxNoticeLen + int64(len(previewIntro)) + max(p.PreviewBytes, 0)
}

// noticeVerdict is what a Compactor found of a text that reads like a
// notice.
type noticeVerdict int8

const (
	verdictUnknown   noticeVerdict = iota
	verdictNotice                  // the notice of a body the owner holds; mask is its mask
	verdictNotNotice               // anything else: inline text
)

// noticeMask returns the mask of text when text is a notice (see above),
// and false for any other text. st is what ParseStoredText read from it.
// Each answer the workspace gave is remembered with the text's token
// count, so a notice is checked once, not at every step.
func (c *Compactor) noticeMask(ctx context.Context, st StoredText, text string) (string, bool) {
	if st.Masked || int64(len(text)) > maxNoticeText(c.off.policy) {
		return "", false
	}
	k := c.key(text)
	c.mu.Lock()
	e := c.cache.get(k)
	var v noticeVerdict
	var mask string
	if e != nil {
		v, mask = e.verdict, e.mask
	}
	c.mu.Unlock()
	if v != verdictUnknown {
		return mask, v == verdictNotice
	}
	mask, v = c.off.maskOfNotice(ctx, st, text)
	if v != verdictUnknown {
		c.mu.Lock()
		e := c.cache.put(k)
		e.verdict, e.mask = v, mask
		c.mu.Unlock()
	}
	return mask, v == verdictNotice
}

// maskOfNotice checks text against the notice the owner's record of
// st.Ref renders: verdictNotice and its mask (the record's size and kind,
// the body's lines) when they are the same bytes, verdictNotNotice when
// they are not, verdictUnknown when the workspace could not tell (the
// text is then stored, which is lossless, and checked again next time).
func (o *Offloader) maskOfNotice(ctx context.Context, st StoredText, text string) (string, noticeVerdict) {
	if o.binding == nil || o.binding.store == nil {
		return "", verdictNotNotice
	}
	rec, err := o.binding.store.GetRecord(ctx, o.binding.owner, st.Ref)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", verdictNotNotice
	case err != nil:
		return "", verdictUnknown
	case rec.Size != st.Size || rec.Kind != st.Kind || rec.Size > MaxNoticeCheck:
		return "", verdictNotNotice
	}
	notice, lines, err := o.renderStored(ctx, st.Ref, rec.Size)
	switch {
	case err != nil:
		return "", verdictUnknown
	case notice != text:
		return "", verdictNotNotice
	}
	return renderMask(o.policy, st.Ref, rec.Size, lines, -1, rec.Kind), verdictNotice
}

// renderStored renders the notice (preview included) that storing the body
// of ref, size bytes, under o's policy gives, from one verified read of the
// body, and returns its line count. The notice depends only on the body
// and the policy (docs/offload.md, "The notice"), so this is the text an
// offload of it showed.
func (o *Offloader) renderStored(ctx context.Context, ref artifact.Ref, size int64) (string, int64, error) {
	keep := max(o.policy.PreviewBytes, 0)
	if o.policy.Tokenizer != nil {
		keep = max(keep, NoticeTokenPrefix, int64(o.policy.noticeHead())) // as offload_store keeps
	}
	keep = min(keep, size)
	head := make([]byte, 0, keep)
	ob := new(observed)
	err := o.binding.store.ScanVerified(ctx, ref, size, func(_ int64, b []byte) error {
		if room := int(keep) - len(head); room > 0 {
			head = append(head, b[:min(room, len(b))]...)
		}
		_, _ = ob.Write(b)
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	st := &storing{o: o, ref: ref, size: size, head: &previewTap{buf: head}}
	st.tokens = o.policy.noticeTokens(head, size) // before the outline's room, as when stored
	st.classified(ob)
	st.outline(ob)
	return st.notice(), st.lines, nil
}
