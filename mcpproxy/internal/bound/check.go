package bound

import (
	"encoding/json"
	"fmt"

	"github.com/hybridctx/hybridctx/internal/jsonstream"
)

// CheckParts returns an error naming the first part of a bounded
// tools/call result that the bounder decides on its own (a block's
// payload, a block without it, structuredContent, the other members
// together) and that is still over threshold bytes; a result that is not
// an object with a content list must itself be within threshold. It is the
// per-part invariant of every path, checked by the tests of this package
// and of mcpproxy (wire, typed, streamed, the proxy's fuzzed sessions).
func CheckParts(out []byte, threshold int64) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(out, &fields); err != nil {
		if int64(len(out)) > threshold {
			return fmt.Errorf("unbounded non-object result: %.200s", out)
		}
		return nil
	}
	var blocks []json.RawMessage
	if c, ok := fields["content"]; ok && !jsonstream.IsNull(c) {
		if json.Unmarshal(c, &blocks) != nil {
			if int64(len(out)) > threshold {
				return fmt.Errorf("unbounded result: %.200s", out)
			}
			return nil
		}
	}
	for _, raw := range blocks {
		payload, _, _, key := wirePayload(raw)
		var n int
		switch p := payload.(type) {
		case string:
			n = len(p)
		case []byte:
			n = len(p)
		case json.RawMessage:
			n = len(p)
		}
		if int64(n) > threshold || key != "" && int64(len(raw)) > threshold && restSize(raw, key) > threshold {
			return fmt.Errorf("unbounded block: %.200s", raw)
		}
	}
	if sc, ok := fields["structuredContent"]; ok && int64(len(sc)) > threshold {
		return fmt.Errorf("unbounded structuredContent: %.200s", sc)
	}
	if rest, _ := extras(fields); int64(len(rest)) > threshold {
		return fmt.Errorf("unbounded extra fields: %.200s", rest)
	}
	return nil
}
