package mcpproxy

import (
	"encoding/json"
	"strings"

	"github.com/hybridctx/hybridctx/internal/jsonstream"
)

// Rewrites of the upstream's results on their way to the client. Each keeps
// every key it does not touch byte for byte, and returns the result
// unchanged when it is not the object it expects.

// withCapabilities makes an initialize or server/discover result advertise
// tools and resources (the proxy adds one tool and one resource template),
// keeping every capability the upstream declared.
func withCapabilities(result json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(result, &fields) != nil || fields == nil {
		return result
	}
	var caps map[string]json.RawMessage
	if c, ok := fields["capabilities"]; ok && !jsonstream.IsNull(c) {
		if json.Unmarshal(c, &caps) != nil {
			return result
		}
	}
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	changed := false
	for _, k := range []string{"tools", "resources"} {
		if c, ok := caps[k]; !ok || jsonstream.IsNull(c) {
			caps[k] = json.RawMessage(`{}`)
			changed = true
		}
	}
	if !changed {
		return result
	}
	return remarshal(fields, "capabilities", caps, result)
}

// withReadTools removes outputSchema from every upstream tool (a bounded
// result cannot keep the promise it makes) and any upstream tool named like
// a read tool (ours reports whether the proxy serves a name), and appends
// the read tools to the last page.
func withReadTools(result json.RawMessage, tools []json.RawMessage, ours func(string) bool) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(result, &fields) != nil || fields == nil {
		return result
	}
	var upstream []json.RawMessage
	if t, ok := fields["tools"]; ok && !jsonstream.IsNull(t) {
		if json.Unmarshal(t, &upstream) != nil {
			return result
		}
	}
	out := make([]json.RawMessage, 0, len(upstream)+len(tools))
	for _, t := range upstream {
		var def map[string]json.RawMessage
		if json.Unmarshal(t, &def) != nil {
			out = append(out, t)
			continue
		}
		var n string
		if json.Unmarshal(def["name"], &n) == nil && ours(n) {
			continue
		}
		// Any spelling a case-insensitive decoder would take.
		removed := false
		for k := range def {
			if strings.EqualFold(k, "outputSchema") {
				delete(def, k)
				removed = true
			}
		}
		if removed {
			if b, err := json.Marshal(def); err == nil {
				t = b
			}
		}
		out = append(out, t)
	}
	if lastPage(fields) {
		out = append(out, tools...)
	}
	return remarshal(fields, "tools", out, result)
}

// withTemplate appends the artifact resource template to the last page of a
// resources/templates/list result, replacing an upstream template with the
// same URI template.
func withTemplate(result json.RawMessage, template json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(result, &fields) != nil || fields == nil {
		return result
	}
	var templates []json.RawMessage
	if t, ok := fields["resourceTemplates"]; ok && !jsonstream.IsNull(t) {
		if json.Unmarshal(t, &templates) != nil {
			return result
		}
	}
	out := make([]json.RawMessage, 0, len(templates)+1)
	for _, t := range templates {
		var def struct {
			URITemplate string `json:"uriTemplate"`
		}
		if json.Unmarshal(t, &def) == nil && def.URITemplate == ArtifactURITemplate {
			continue
		}
		out = append(out, t)
	}
	if lastPage(fields) {
		out = append(out, template)
	}
	return remarshal(fields, "resourceTemplates", out, result)
}

// lastPage reports whether a list result has no next cursor.
func lastPage(fields map[string]json.RawMessage) bool {
	c, ok := fields["nextCursor"]
	if !ok || jsonstream.IsNull(c) {
		return true
	}
	var s string
	return json.Unmarshal(c, &s) == nil && s == ""
}

// remarshal sets fields[key] = v and encodes fields, or returns orig when
// that fails.
func remarshal(fields map[string]json.RawMessage, key string, v any, orig json.RawMessage) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return orig
	}
	fields[key] = b
	out, err := json.Marshal(fields)
	if err != nil {
		return orig
	}
	return out
}

// localList is the result the proxy gives for a list method the upstream
// does not implement: {"<key>": [items…]}.
func localList(key string, items ...json.RawMessage) json.RawMessage {
	b := make([]byte, 0, 64)
	b = append(b, `{"`...)
	b = append(b, key...)
	b = append(b, `":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, "]}"...)
}
