package viewengine

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// compiledRegexp is a cached expression and its program's size.
type compiledRegexp struct {
	re    *regexp.Regexp
	insts int
}

// match bounds one call of gojq's _match: the pattern's length, the
// matching work (subject × program), and for a global match the match
// objects, whose offsets gojq counts from the start of the subject each.
func (g *guard) match(subject, re, flags, test any) bool {
	s, ok1 := subject.(string)
	pat, ok2 := re.(string)
	if !ok1 || !ok2 {
		return true // gojq reports the type error
	}
	if len(pat) > MaxPatternBytes {
		return false
	}
	fl, _ := flags.(string)
	r, insts, ok := g.compile(pat, fl)
	if !ok {
		return true // gojq reports the invalid expression
	}
	if int64(len(s)+1)*int64(insts) > guardRegexWork {
		return false
	}
	if test == true || !strings.ContainsRune(fl, 'g') {
		return true
	}
	// One FindAll is a step nothing interrupts, and a search may scan to
	// the end of the subject for every match (a*b|a over a run of a's), so
	// its work can grow with the square of the subject. The matches are
	// counted over prefixes twice as long each time: a prefix has no more
	// matches than the subject, so the bounds refuse such a subject after
	// work about that of its bound, and the run's deadline is checked
	// between the prefixes.
	groups := int64(r.NumSubexp() + 1)
	for m := prefixStart; ; m *= 2 {
		if g.ctx != nil && g.ctx.Err() != nil {
			return false
		}
		n := int64(len(r.FindAllStringIndex(s[:min(m, len(s))], int(guardMatches/groups)+1)))
		if n*groups > guardMatches || n*groups*int64(len(s)+1) > guardRegexWork*4 {
			return false
		}
		if m >= len(s) {
			return true
		}
	}
}

// prefixStart is the first prefix a global match is counted over.
const prefixStart = 4 << 10

// compile mirrors gojq's reading of the flags; an expression gojq would
// refuse is left to gojq.
func (g *guard) compile(pat, flags string) (*regexp.Regexp, int, bool) {
	if strings.ContainsRune(flags, 'i') {
		pat = "(?i)" + pat
	}
	if strings.ContainsRune(flags, 'm') {
		pat = "(?s)" + pat
	}
	if c, ok := g.regexps[pat]; ok {
		return c.re, c.insts, true
	}
	parsed, err := syntax.Parse(pat, syntax.Perl)
	if err != nil {
		return nil, 0, false
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, 0, false
	}
	r, err := regexp.Compile(pat)
	if err != nil {
		return nil, 0, false
	}
	if g.regexps == nil {
		g.regexps = map[string]compiledRegexp{}
	}
	g.regexps[pat] = compiledRegexp{r, len(prog.Inst)}
	return r, len(prog.Inst), true
}
