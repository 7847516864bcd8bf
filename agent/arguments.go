package agent

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// ReadArguments encodes read_artifact arguments (max_bytes left out when 0).
func ReadArguments(ref string, offset, length, maxBytes int64) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"reference":`)
	var q bytes.Buffer
	enc := json.NewEncoder(&q)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(ref)
	b.Write(bytes.TrimSuffix(q.Bytes(), []byte("\n")))
	b.WriteString(`,"offset":` + strconv.FormatInt(offset, 10) + `,"length":` + strconv.FormatInt(length, 10))
	if maxBytes != 0 {
		b.WriteString(`,"max_bytes":` + strconv.FormatInt(maxBytes, 10))
	}
	b.WriteByte('}')
	return json.RawMessage(b.String())
}
