package viewengine

// queryPrelude is prepended to every filter. A definition in a filter
// shadows gojq's built-in of the same name and arity, for the filter and
// for the definitions after it, so the prelude first keeps each original
// under a private name (_hx_o_*), then redefines the name as a guard call
// (_hx_check, see guard.go) before the original. gojq's own
// jq-defined built-ins are compiled in their own scope and would still call
// the unguarded originals, so those that reach one (add/1, from_entries,
// *_by, fromstream, del, pick, IN, INDEX, JOIN and the regular expression
// family) are redefined here over the guarded names. Operators are routed
// to the guarded operators of ops.go (_hx_plus and the others)
// by the rewrite of the filter (sandbox.go). The names gojq
// itself looks up while
// compiling (tostring and the format functions of string interpolation,
// _add and the others of "op=") resolve to these definitions too.
const queryPrelude = `
def _hx_o_contains($b): contains($b);
def _hx_o_inside($b): inside($b);
def _hx_o_indices($i): indices($i);
def _hx_o_index($i): index($i);
def _hx_o_rindex($i): rindex($i);
def _hx_o_format($f): format($f);
def _hx_o_sort: sort;
def _hx_o_unique: unique;
def _hx_o_min: min;
def _hx_o_max: max;
def _hx_o_bsearch($t): bsearch($t);
def _hx_o_flatten: flatten;
def _hx_o_flatten($d): flatten($d);
def _hx_o_add: add;
def _hx_o_join($s): join($s);
def _hx_o_explode: explode;
def _hx_o_split($s): split($s);
def _hx_o_fromjson: fromjson;
def _hx_o_tonumber: tonumber;
def _hx_o_setpath($p; $v): setpath($p; $v);
def _hx_o_getpath($p): getpath($p);
def _hx_o_delpaths($ps): delpaths($ps);
def _hx_o_transpose: transpose;
def _hx_o_strftime($f): strftime($f);
def _hx_o_strflocaltime($f): strflocaltime($f);

def contains($b): _hx_check("pair"; .; $b) | _hx_o_contains($b);
def inside($b): _hx_check("pair"; .; $b) | _hx_o_inside($b);
def indices($i): _hx_check("indices"; .; $i) | _hx_o_indices($i);
def index($i): _hx_check("indices"; .; $i) | _hx_o_index($i);
def rindex($i): _hx_check("indices"; .; $i) | _hx_o_rindex($i);
def tojson: _hx_tojson;
def tostring: _hx_tostring;
def format($f): _hx_check("text"; $f; .) | _hx_o_format($f);
def _tohtml: format("html");
def _touri: format("uri");
def _tourid: format("urid");
def _tocsv: format("csv");
def _totsv: format("tsv");
def _tosh: format("sh");
def _tobase64: format("base64");
def _tobase64d: format("base64d");
def sort: _hx_check("sort"; .) | _hx_o_sort;
def unique: _hx_check("sort"; .) | _hx_o_unique;
def min: _hx_check("cmp"; .) | _hx_o_min;
def max: _hx_check("cmp"; .) | _hx_o_max;
def bsearch($t): _hx_check("cmp"; .; $t) | _hx_o_bsearch($t);
def flatten: _hx_check("flatten"; .) | _hx_o_flatten;
def flatten($d): _hx_check("flatten"; .) | _hx_o_flatten($d);
def add: _hx_check("addall"; .) | _hx_o_add;
def add(f): [f] | add;
def join($s): _hx_check("join"; .; $s) | _hx_o_join($s);
def explode: _hx_check("explode"; .) | _hx_o_explode;
def split($s): _hx_check("split"; .; $s) | _hx_o_split($s);
def fromjson: _hx_check("fromjson"; .) | _hx_o_fromjson;
def tonumber: _hx_check("tonumber"; .) | _hx_o_tonumber;
def setpath($p; $v): _hx_check("path"; $p) | _hx_o_setpath($p; $v);
def getpath($p): _hx_check("getpath"; $p) | _hx_o_getpath($p);
def delpaths($ps): _hx_check("paths"; $ps) | _hx_o_delpaths($ps);
def transpose: _hx_check("transpose"; .) | _hx_o_transpose;
def strftime($f): _hx_check("strftime"; $f) | _hx_o_strftime($f);
def strflocaltime($f): _hx_check("strftime"; $f) | _hx_o_strflocaltime($f);

def _add(l; r): _hx_plus(l; r);
def _subtract(l; r): _hx_minus(l; r);
def _multiply(l; r): _hx_mul(l; r);
def _divide(l; r): _hx_div(l; r);
def _hx_key(k): k | _hx_check("key"; .);
def _hx_paths(f): (path(f) | _hx_check("path"; .)) as $p | _hx_o_getpath($p);

def from_entries: map({ (.key // .Key // .name // .Name):
  if has("value") then .value else .Value end }) | add // {};
def with_entries(f): to_entries | map(f) | from_entries;
def min_by(f): map([f]) as $k | _hx_check("cmp"; $k) | _min_by($k);
def max_by(f): map([f]) as $k | _hx_check("cmp"; $k) | _max_by($k);
def sort_by(f): map([f]) as $k | _hx_check("sort"; $k) | _sort_by($k);
def group_by(f): map([f]) as $k | _hx_check("sort"; $k) | _group_by($k);
def unique_by(f): map([f]) as $k | _hx_check("sort"; $k) | _unique_by($k);
def fromstream(f):
  foreach f as $pv (
    null;
    if .e then null end |
    $pv as [$p, $v] |
    if $pv | length == 2 then
      setpath(["v"] + $p; $v) |
      setpath(["e"]; $p | length == 0)
    else
      setpath(["e"]; $p | length == 1)
    end;
    if .e then .v else empty end
  );
def del(f): delpaths([path(f)]);
def pick(f): . as $v |
  reduce path(f) as $p (null; setpath($p; $v | getpath($p)));
def IN(s): any(_hx_eq(s; .); .);
def IN(src; s): any(_hx_eq(src; s); .);
def INDEX(stream; idx_expr):
  reduce stream as $row ({}; .[$row | idx_expr | tostring] = $row);
def INDEX(idx_expr): INDEX(.[]; idx_expr);
def JOIN($idx; idx_expr): [.[] | [., $idx[_hx_key(idx_expr)]]];
def JOIN($idx; stream; idx_expr): stream | [., $idx[_hx_key(idx_expr)]];
def JOIN($idx; stream; idx_expr; join_expr):
  stream | [., $idx[_hx_key(idx_expr)]] | join_expr;

def _hx_match($re; $flags; $test):
  _hx_check("match"; .; $re; $flags; $test) | _match($re; $flags; $test);
def match($re; $flags): _hx_match($re; $flags; false)[];
def match($re):
  if $re | type == "array" then match($re[0]; $re[1]) else match($re; null) end;
def test($re; $flags): _hx_match($re; $flags; true);
def test($re):
  if $re | type == "array" then test($re[0]; $re[1]) else test($re; null) end;
def capture($re; $flags): match($re; $flags) | .captures | _captures;
def capture($re):
  if $re | type == "array" then capture($re[0]; $re[1]) else capture($re; null) end;
def scan($re; $flags):
  match($re; $flags + "g") |
  if .captures == [] then .string else [.captures[].string] end;
def scan($re): scan($re; null);
def splits($re; $flags):
  .[foreach (match($re; $flags + "g"), null) as {$offset, $length}
      (null; {start: .next, end: $offset, next: $offset + $length})];
def splits($re): splits($re; null);
def split($re; $flags): [splits($re; $flags)];
def sub($re; str; $flags):
  reduce match($re; $flags) as {$offset, $length, $captures}
    ({s: ., r: []};
      reduce ($captures | _captures | str) as $s
        (.i = 0; .s[.next:$offset] as $x | .r[.i] |= _hx_plus(.; _hx_plus($x; $s)) | .i += 1) |
      .next = $offset + $length) | _hx_plus(.r[]; .s[.next:]) // .s;
def sub($re; str): sub($re; str; null);
def gsub($re; str; $flags): sub($re; str; $flags + "g");
def gsub($re; str): sub($re; str; "g");
.`
