package child

import "strings"

// envWithout returns env ("NAME=value" entries) without the entries of the
// names in drop. Names compare exactly, as the program reads them.
func envWithout(env, drop []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, d := range drop {
			if name == d {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
