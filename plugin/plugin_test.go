package plugin

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// NCCL's indices, restated from its headers (nccl_common.h, plugin/nccl_tuner.h)
// to check the plugin's tables against.
var (
	collectives = map[string]int{
		"broadcast": 0, "reduce": 1, "allgather": 2, "reducescatter": 3, "allreduce": 4,
		"sendrecv": 5, "send": 6, "recv": 7, "alltoall": 8,
	}
	algorithms = []string{"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"}
	protocols  = []string{"ll", "ll128", "simple"}
)

const ignore = -1 // NCCL_ALGO_PROTO_IGNORE

// costs is a cost table as NCCL fills it: [algorithm][protocol], in NCCL's
// index order.
type costs [][]float32

// ncclTable is the table queries get unless they bring their own: NCCL's own
// pick would be ring/ll128.
var ncclTable = costs{
	{10, 12, 30},             // tree
	{20, 8, 15},              // ring
	{ignore, ignore, ignore}, // collnet_direct
	{ignore, ignore, ignore}, // collnet_chain
	{ignore, ignore, 25},     // nvls
	{ignore, ignore, ignore}, // nvls_tree
	{ignore, ignore, ignore}, // pat
}

type query struct {
	coll  string
	bytes uint64
	table costs // nil: ncclTable
}

func (q query) costs() costs {
	if q.table == nil {
		return ncclTable
	}
	return q.table
}

// comm is the communicator the harness initializes the plugin for.
type comm struct {
	version      int // the tuner interface: 4, 5 or 6
	nodes, ranks int
	threads      int // how many threads share the context (0: one)
	comms        int // how many communicators of the process call init (0: one); the last answers the queries
}

var defaultComm = comm{version: 5, nodes: 2, ranks: 16}

// untouched is how describe shows a call that left NCCL's choice alone.
const untouched = "table untouched, channels untouched"

// pair is a harness and the library it loads.
type pair struct{ harness, lib string }

// testBuild is what `make test-build` made, once per test process.
var testBuild struct {
	once sync.Once
	dir  string
	asan pair // with the address and undefined behaviour sanitizers
	tsan pair // with the thread sanitizer
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testBuild.dir != "" {
		os.RemoveAll(testBuild.dir)
	}
	os.Exit(code)
}

// compiler returns $CC or cc; without it the test skips, except in CI,
// where it fails.
func compiler(t testing.TB) string {
	cc := os.Getenv("CC")
	if strings.TrimSpace(cc) == "" {
		cc = "cc"
	}
	need(t, strings.Fields(cc)[0])
	return cc
}

// need skips the test where tool is missing, except in CI, where it fails.
func need(t testing.TB, tool string) {
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the plugin's tests need %s in CI: %v", tool, err)
		}
		t.Skipf("no %s: %v", tool, err)
	}
}

// built returns the harness and library pairs, building them on the first
// call.
func built(t testing.TB) (asan, tsan pair) {
	cc := compiler(t)
	need(t, "make")
	b := &testBuild
	b.once.Do(func() {
		// Read here so that go test's cache sees when the harness changes
		// (the library's sources are embedded, which it sees already).
		if _, b.err = os.ReadFile("test/harness.c"); b.err != nil {
			return
		}
		if b.dir, b.err = os.MkdirTemp("", "nccltune-plugin-test"); b.err != nil {
			return
		}
		out, err := exec.Command("make", "-s", "-j4", "O="+b.dir, "CC="+cc, "test-build").CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("make test-build: %v\n%s", err, out)
			return
		}
		bin := filepath.Join(b.dir, "testbin")
		b.asan = pair{filepath.Join(bin, "harness"), filepath.Join(bin, LibraryName)}
		b.tsan = pair{filepath.Join(bin, "tsan", "harness"), filepath.Join(bin, "tsan", LibraryName)}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.asan, b.tsan
}

// checkSanitized logs where p was built without the sanitizer whose
// runtime defines symbol, as the Makefile does where CC lacks it.
func checkSanitized(t testing.TB, p pair, symbol string) {
	ok, err := importsSymbol(p.harness, symbol)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Logf("%s was built without the sanitizer of %s: errors it would catch may go unseen", p.harness, symbol)
	}
}

func importsSymbol(path, name string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	syms, err := f.ImportedSymbols()
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(syms, func(s elf.ImportedSymbol) bool { return s.Name == name }), nil
}

type logLine struct {
	level string // INFO or WARN
	flags uint64
	msg   string
}

type output struct {
	logs    []logLine
	results []string // describe of each query, in order
	lines   []string // every line, as the harness printed it
}

// warnings returns the WARN messages.
func (o output) warnings() []string {
	var w []string
	for _, l := range o.logs {
		if l.level == "WARN" {
			w = append(w, l.msg)
		}
	}
	return w
}

// messages returns the log messages that match re.
func (o output) messages(re string) []string {
	var m []string
	r := regexp.MustCompile(re)
	for _, l := range o.logs {
		if r.MatchString(l.msg) {
			m = append(m, l.msg)
		}
	}
	return m
}

// writeRules writes a rules file and returns its path.
func writeRules(t testing.TB, content string) string {
	path := filepath.Join(t.TempDir(), "rules")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// withRules is the environment that names path as the rules file.
func withRules(path string) []string { return []string{RulesEnv + "=" + path} }

// runHarness runs the harness on lib with env added to the test's own
// environment, less NCCLTUNE_RULES, for the communicator c and the queries.
// A crash, a hang, a sanitizer report or anything on stderr fails the test.
func runHarness(t testing.TB, p pair, env []string, c comm, queries ...query) output {
	var stdin strings.Builder
	for _, q := range queries {
		table := q.costs()
		coll, ok := collectives[q.coll]
		if !ok {
			t.Fatalf("no collective %q", q.coll)
		}
		fmt.Fprintf(&stdin, "%d %d %d %d", coll, q.bytes, len(table), len(table[0]))
		for _, row := range table {
			for _, v := range row {
				fmt.Fprintf(&stdin, " %g", v)
			}
		}
		stdin.WriteString("\n")
	}
	args := []string{p.lib, strconv.Itoa(c.version), strconv.Itoa(c.nodes), strconv.Itoa(c.ranks)}
	if c.threads > 0 || c.comms > 0 {
		args = append(args, strconv.Itoa(max(c.threads, 1)))
	}
	if c.comms > 0 {
		args = append(args, strconv.Itoa(c.comms))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.harness, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, RulesEnv+"=") })
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin.String())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("harness %v hung with %q\n%s", args, env, stdout.String())
	}
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("harness %v with %q: %v\nstdout:\n%s\nstderr:\n%s", args, env, err, stdout.String(), stderr.String())
	}
	return parseOutput(t, stdout.String(), queries)
}

var (
	logRE   = regexp.MustCompile(`^log (INFO|WARN) (0x[0-9a-f]+) (.*)$`)
	queryRE = regexp.MustCompile(`^query rc=(-?\d+) channels=(-|-?\d+) changed=(.*)$`)
)

func parseOutput(t testing.TB, stdout string, queries []query) output {
	var o output
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		o.lines = append(o.lines, line)
		if m := logRE.FindStringSubmatch(line); m != nil {
			flags, _ := strconv.ParseUint(m[2], 0, 64)
			if !strings.HasPrefix(m[3], "nccltune: ") {
				t.Errorf("log message without the nccltune: prefix: %q", m[3])
			}
			// What the plugin echoes from a rules file must not drive a terminal or upset a reader of UTF-8.
			if !utf8.ValidString(m[3]) || strings.ContainsFunc(m[3], unicode.IsControl) {
				t.Errorf("log message with a control character or bytes that are not UTF-8: %q", m[3])
			}
			o.logs = append(o.logs, logLine{level: m[1], flags: flags, msg: m[3]})
		} else if m := queryRE.FindStringSubmatch(line); m != nil && len(o.results) < len(queries) {
			if m[1] != "0" {
				t.Errorf("getCollInfo returned %s", m[1])
			}
			o.results = append(o.results, describe(t, m[2], m[3], queries[len(o.results)]))
		} else if line == "finalize rc=0" || strings.HasPrefix(line, "plugin ") || strings.HasPrefix(line, "chunksize ") {
			continue
		} else {
			t.Errorf("unexpected harness line %q", line)
		}
	}
	if len(o.results) != len(queries) {
		t.Fatalf("%d results for %d queries:\n%s", len(o.results), len(queries), stdout)
	}
	return o
}

// describe renders what a getCollInfo call did: "ring/simple=0, channels 16".
func describe(t testing.TB, channels, changed string, q query) string {
	table := q.costs()
	var parts []string
	if changed == "-" {
		parts = append(parts, "table untouched")
	} else {
		for _, c := range strings.Split(changed, ",") {
			var a, p int
			var v float32
			if _, err := fmt.Sscanf(c, "%d/%d:%g", &a, &p, &v); err != nil {
				t.Fatalf("bad change %q: %v", c, err)
			}
			if table[a][p] < 0 {
				t.Errorf("revived %s/%s (%g) to %g", indexName(algorithms, a), indexName(protocols, p), table[a][p], v)
			}
			parts = append(parts, fmt.Sprintf("%s/%s=%g", indexName(algorithms, a), indexName(protocols, p), v))
		}
	}
	if channels == "-" {
		parts = append(parts, "channels untouched")
	} else {
		parts = append(parts, "channels "+channels)
	}
	return strings.Join(parts, ", ")
}

// indexName is names[i], or "#i" past its end, as the plugin logs an
// algorithm or protocol of a later NCCL.
func indexName(names []string, i int) string {
	if i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("#%d", i)
}

// rules returns a rules file of the given rule lines.
func rules(lines ...string) string {
	return "nccltune-rules 1\n" + strings.Join(lines, "\n") + "\n"
}

func TestRules(t *testing.T) {
	asan, _ := built(t)
	checkSanitized(t, asan, "__asan_init")
	noLL := costs{ // no LL anywhere; tree is cheaper than ring with LL128
		{ignore, 6, 30},
		{ignore, 7, 15},
		{ignore, ignore, ignore},
		{ignore, ignore, ignore},
		{ignore, ignore, ignore},
		{ignore, ignore, ignore},
		{ignore, ignore, ignore},
	}
	nothing := costs{{ignore, ignore, ignore}, {ignore, ignore, ignore}, {ignore, ignore, ignore},
		{ignore, ignore, ignore}, {ignore, ignore, ignore}, {ignore, ignore, ignore}, {ignore, ignore, ignore}}
	oddNegatives := costs{{-2, 5, 6}, {-0.5, 9, 4}, {ignore, ignore, ignore},
		{ignore, ignore, ignore}, {ignore, ignore, ignore}, {ignore, ignore, ignore}, {ignore, ignore, ignore}}
	sixAlgos := costs{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}, {13, 14, 15}, {16, 17, 18}}
	// A later NCCL's larger table: an eighth algorithm and a fourth protocol,
	// the cheapest of their row and column (NCCL 2.23 went from 6 to 7
	// algorithms within one tuner interface, v3).
	larger := costs{{5, 6, 7, 4}, {8, 9, 10, 11}, {ignore, ignore, ignore, ignore}, {ignore, ignore, ignore, ignore},
		{ignore, ignore, ignore, ignore}, {ignore, ignore, ignore, ignore}, {ignore, ignore, ignore, ignore}, {1, 2, 3, 0.5}}
	// CollNet available, and cheapest: collnet_direct/simple overall, collnet_chain with LL128.
	collnet := costs{{10, 12, 30}, {20, 8, 15}, {ignore, ignore, 1}, {ignore, 5, 3}, {ignore, ignore, 25},
		{ignore, ignore, ignore}, {ignore, ignore, ignore}}

	cases := []struct {
		name    string
		rules   string
		comm    comm // zero: defaultComm
		queries []query
		want    []string
	}{
		{
			name:    "algorithm and protocol",
			rules:   rules("allreduce 0 - 2 16 tree ll 0"),
			queries: []query{{"allreduce", 100, nil}},
			want:    []string{"tree/ll=0, channels untouched"},
		},
		{
			name:    "algorithm and protocol and channels",
			rules:   rules("allreduce 0 - 2 16 ring simple 16"),
			queries: []query{{"allreduce", 1 << 30, nil}},
			want:    []string{"ring/simple=0, channels 16"},
		},
		{
			name:    "algorithm only: NCCL's cheapest protocol for it",
			rules:   rules("allreduce 0 - * * tree * 0", "allgather 0 - * * ring * 4"),
			queries: []query{{"allreduce", 1, nil}, {"allgather", 1, nil}, {"allreduce", 1, noLL}},
			want:    []string{"tree/ll=0, channels untouched", "ring/ll128=0, channels 4", "tree/ll128=0, channels untouched"},
		},
		{
			name:    "protocol only: NCCL's cheapest algorithm for it",
			rules:   rules("allreduce 0 - * * * simple 0", "allgather 0 - * * * ll128 2"),
			queries: []query{{"allreduce", 1, nil}, {"allgather", 1, nil}, {"allgather", 1, noLL}},
			want:    []string{"ring/simple=0, channels untouched", "ring/ll128=0, channels 2", "tree/ll128=0, channels 2"},
		},
		{
			name:    "neither: only the channels",
			rules:   rules("allreduce 0 - * * * * 8", "broadcast 0 - * * * * 0"),
			queries: []query{{"allreduce", 1, nil}, {"broadcast", 1, nil}},
			want:    []string{"table untouched, channels 8", untouched},
		},
		{
			name:    "sizes are inclusive at both ends",
			rules:   rules("allreduce 0 65535 * * tree ll 0", "allreduce 65536 - * * ring simple 16"),
			queries: []query{{"allreduce", 0, nil}, {"allreduce", 65535, nil}, {"allreduce", 65536, nil}, {"allreduce", 1 << 62, nil}},
			want:    []string{"tree/ll=0, channels untouched", "tree/ll=0, channels untouched", "ring/simple=0, channels 16", "ring/simple=0, channels 16"},
		},
		{
			name:    "the largest size",
			rules:   rules("allreduce 18446744073709551615 18446744073709551615 * * tree simple 0"),
			queries: []query{{"allreduce", 1<<64 - 1, nil}, {"allreduce", 1<<64 - 2, nil}},
			want:    []string{"tree/simple=0, channels untouched", untouched},
		},
		{
			name:    "the first matching rule wins",
			rules:   rules("allreduce 0 1000 * * tree ll 1", "allreduce 0 - * * ring simple 2", "allreduce 500 - * * tree simple 3"),
			queries: []query{{"allreduce", 600, nil}, {"allreduce", 2000, nil}},
			want:    []string{"tree/ll=0, channels 1", "ring/simple=0, channels 2"},
		},
		{
			name:    "an unavailable first match leaves NCCL's choice, later rules unread",
			rules:   rules("allreduce 0 - * * collnet_direct simple 4", "allreduce 0 - * * ring simple 16"),
			queries: []query{{"allreduce", 1, nil}},
			want:    []string{untouched},
		},
		{
			name: "unavailable pairs are never revived",
			rules: rules("allreduce 0 - * * nvls ll 4", "allgather 0 - * * nvls_tree * 4", "reducescatter 0 - * * * ll 4",
				"broadcast 0 - * * tree ll 4", "reduce 0 - * * tree * 4", "sendrecv 0 - * * * simple 4"),
			queries: []query{{"allreduce", 1, nil}, {"allgather", 1, nil}, {"reducescatter", 1, noLL},
				{"broadcast", 1, nothing}, {"reduce", 1, nothing}, {"sendrecv", 1, nothing}},
			want: []string{untouched, untouched, untouched, untouched, untouched, untouched},
		},
		{
			name:    "negative costs other than IGNORE count as unavailable",
			rules:   rules("allreduce 0 - * * tree ll 0", "allgather 0 - * * * ll 0", "broadcast 0 - * * ring * 0"),
			queries: []query{{"allreduce", 1, oddNegatives}, {"allgather", 1, oddNegatives}, {"broadcast", 1, oddNegatives}},
			want:    []string{untouched, untouched, "ring/simple=0, channels untouched"},
		},
		{
			name:    "pairs outside a smaller table are unavailable",
			rules:   rules("allreduce 0 - * * pat simple 4", "allgather 0 - * * * simple 0"),
			queries: []query{{"allreduce", 1, sixAlgos}, {"allgather", 1, sixAlgos}},
			want:    []string{untouched, "tree/simple=0, channels untouched"},
		},
		{
			// Channels only where NCCL bounds them: it may not for an algorithm the plugin does not know.
			name:    "a larger table than the plugin knows: its own names, NCCL's cheapest for *, no channels for a later algorithm",
			rules:   rules("allreduce 0 - * * * ll 0", "allgather 0 - * * tree * 0", "broadcast 0 - * * ring simple 2", "reduce 0 - * * * * 3"),
			queries: []query{{"allreduce", 1, larger}, {"allgather", 1, larger}, {"broadcast", 1, larger}, {"reduce", 1, larger}},
			want:    []string{"#7/ll=0, channels untouched", "tree/#3=0, channels untouched", "ring/simple=0, channels 2", untouched},
		},
		{
			name:    "no rule for the collective or size: NCCL's choice, byte for byte",
			rules:   rules("allreduce 1024 2047 * * tree ll 8"),
			queries: []query{{"allgather", 1500, nil}, {"allreduce", 1023, nil}, {"allreduce", 2048, nil}, {"allreduce", 1024, nothing}},
			want:    []string{untouched, untouched, untouched, untouched},
		},
		{
			name:    "every collective name",
			rules:   rules("broadcast 0 - * * tree ll 1", "reduce 0 - * * tree ll 2", "allgather 0 - * * tree ll 3", "reducescatter 0 - * * tree ll 4", "allreduce 0 - * * tree ll 5", "sendrecv 0 - * * tree ll 6", "send 0 - * * tree ll 7", "recv 0 - * * tree ll 8", "alltoall 0 - * * tree ll 9"),
			queries: []query{{"broadcast", 1, nil}, {"reduce", 1, nil}, {"allgather", 1, nil}, {"reducescatter", 1, nil}, {"allreduce", 1, nil}, {"sendrecv", 1, nil}, {"send", 1, nil}, {"recv", 1, nil}, {"alltoall", 1, nil}},
			want: []string{"tree/ll=0, channels 1", "tree/ll=0, channels 2", "tree/ll=0, channels 3", "tree/ll=0, channels 4", "tree/ll=0, channels 5",
				"tree/ll=0, channels 6", "tree/ll=0, channels 7", "tree/ll=0, channels 8", "tree/ll=0, channels 9"},
		},
		{
			name:    "every algorithm and protocol name",
			rules:   rules("allreduce 0 0 * * tree ll 0", "allreduce 1 1 * * ring ll128 0", "allreduce 2 2 * * collnet_direct simple 0", "allreduce 3 3 * * collnet_chain ll 0", "allreduce 4 4 * * nvls ll128 0", "allreduce 5 5 * * nvls_tree simple 0", "allreduce 6 6 * * pat ll 0", "allreduce 7 7 * * pat simple 64"),
			queries: []query{{"allreduce", 0, sixAlgos}, {"allreduce", 1, sixAlgos}, {"allreduce", 2, sixAlgos}, {"allreduce", 3, sixAlgos}, {"allreduce", 4, sixAlgos}, {"allreduce", 5, sixAlgos}, {"allreduce", 6, append(slices.Clone(sixAlgos), []float32{1, 2, 3})}, {"allreduce", 7, append(slices.Clone(sixAlgos), []float32{1, 2, 3})}},
			want: []string{"tree/ll=0, channels untouched", "ring/ll128=0, channels untouched", "collnet_direct/simple=0, channels untouched", "collnet_chain/ll=0, channels untouched",
				"nvls/ll128=0, channels untouched", "nvls_tree/simple=0, channels untouched", "pat/ll=0, channels untouched", "pat/simple=0, channels 64"},
		},
		{
			// NCCL runs CollNet, and NVLS across nodes (CollNet+NVLS), on
			// exactly the channels a plugin gives, not bounded by those it set
			// up: more crash it. Ring, tree, PAT and NVLS within a node are bounded.
			name: "channels never steer what NCCL runs on as many channels as it is given",
			rules: rules("allreduce 0 0 * * collnet_direct simple 32", "allreduce 1 1 * * collnet_chain * 32", "allreduce 2 2 * * nvls simple 32",
				"allreduce 3 3 * * * * 8", "allreduce 4 4 * * * ll128 8", "allreduce 5 5 * * ring simple 8", "allreduce 6 6 * * tree * 8", "allreduce 7 7 * * * * 8"),
			queries: []query{{"allreduce", 0, collnet}, {"allreduce", 1, collnet}, {"allreduce", 2, collnet}, {"allreduce", 3, collnet},
				{"allreduce", 4, collnet}, {"allreduce", 5, collnet}, {"allreduce", 6, collnet}, {"allreduce", 7, nil}},
			want: []string{"collnet_direct/simple=0, channels untouched", "collnet_chain/simple=0, channels untouched", "nvls/simple=0, channels untouched",
				untouched, "collnet_chain/ll128=0, channels untouched", "ring/simple=0, channels 8", "tree/ll=0, channels 8", "table untouched, channels 8"},
		},
		{
			name:    "channels steer NVLS within a node",
			rules:   rules("allreduce 0 - 1 8 nvls simple 8"),
			comm:    comm{version: 5, nodes: 1, ranks: 8},
			queries: []query{{"allreduce", 1, collnet}},
			want:    []string{"nvls/simple=0, channels 8"},
		},
		{
			name:    "rules for other node and rank counts are not kept",
			rules:   rules("allreduce 0 - 1 16 tree ll 1", "allreduce 0 - 2 8 tree ll 2", "allreduce 0 - * 8 tree ll 3", "allreduce 0 - 1 * tree ll 4", "allreduce 0 - 2 * ring ll 5"),
			queries: []query{{"allreduce", 1, nil}},
			want:    []string{"ring/ll=0, channels 5"},
		},
		{
			name:    "a rule for this communicator's counts",
			rules:   rules("allreduce 0 - 2 16 tree ll 1", "allreduce 0 - * * ring ll 2"),
			comm:    comm{version: 5, nodes: 1, ranks: 8},
			queries: []query{{"allreduce", 1, nil}},
			want:    []string{"ring/ll=0, channels 2"},
		},
		{
			name:    "ranks and nodes both checked",
			rules:   rules("allreduce 0 - 4 32 tree ll 1", "allreduce 0 - * 32 ring ll 2", "allreduce 0 - 4 * ring simple 3"),
			comm:    comm{version: 5, nodes: 4, ranks: 33},
			queries: []query{{"allreduce", 1, nil}},
			want:    []string{"ring/simple=0, channels 3"},
		},
		{
			name:    "comments, blank lines, tabs and CRLF",
			rules:   "\r\n# rules\r\n  nccltune-rules\t1   # version\r\n\r\n\tallreduce\t0 -\t* *  ring simple 4 # tuned\r\n",
			queries: []query{{"allreduce", 1, nil}},
			want:    []string{"ring/simple=0, channels 4"},
		},
		{
			// What Windows editors write first; invisible, so a refusal would name a line that looks right.
			name:    "a UTF-8 byte order mark",
			rules:   "\ufeffnccltune-rules 1\r\nallreduce 0 - * * ring simple 4\r\n",
			queries: []query{{"allreduce", 1, nil}},
			want:    []string{"ring/simple=0, channels 4"},
		},
		{
			name:    "no line end at the end of the file",
			rules:   "nccltune-rules 1\nallreduce 0 - * * ring simple 4",
			queries: []query{{"allreduce", 1, nil}},
			want:    []string{"ring/simple=0, channels 4"},
		},
		{
			name:    "a file with no rules",
			rules:   "nccltune-rules 1\n",
			queries: []query{{"allreduce", 1, nil}},
			want:    []string{untouched},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := tc.comm
			if c == (comm{}) {
				c = defaultComm
			}
			out := runHarness(t, asan, withRules(writeRules(t, tc.rules)), c, tc.queries...)
			if w := out.warnings(); len(w) > 0 {
				t.Errorf("warnings: %q", w)
			}
			if !slices.Equal(out.results, tc.want) {
				t.Errorf("results:\n got %q\nwant %q\nlog:\n%s", out.results, tc.want, strings.Join(out.lines, "\n"))
			}
		})
	}
}

func TestLog(t *testing.T) {
	asan, _ := built(t)
	path := writeRules(t, "# tuned by nccltune\nnccltune-rules 1\n"+
		"allreduce 0 65535 2 16 tree ll 0\n"+
		"allreduce 65536 - 2 16 ring simple 16\n"+
		"allreduce 0 - 1 8 ring simple 16\n"+
		"allgather 0 - * * ring * 0\n"+
		"broadcast 0 - * * * * 2\n"+
		"reduce 0 - * * collnet_chain simple 0\n"+
		"reducescatter 0 - * * nvls simple 8\n")
	q := []query{{"allreduce", 100, nil}, {"allreduce", 100, nil}, {"allreduce", 1 << 20, nil}, {"allgather", 1, nil},
		{"allgather", 1, nil}, {"broadcast", 1, nil}, {"reduce", 1, nil}, {"reduce", 1, nil}, {"sendrecv", 1, nil},
		{"reducescatter", 1, nil}, {"reducescatter", 1, nil}}
	out := runHarness(t, asan, withRules(path), defaultComm, q...)
	const init, tuning = 0x41, 0x40 // NCCL_INIT|NCCL_TUNING, NCCL_TUNING
	want := []logLine{
		{"INFO", init, "nccltune: loaded " + path + ": 7 rules, 6 for this communicator (2 nodes, 16 ranks)"},
		{"INFO", init, "nccltune: rule 1 (line 3): allreduce 0 65535 2 16 tree ll 0"},
		{"INFO", init, "nccltune: rule 2 (line 4): allreduce 65536 - 2 16 ring simple 16"},
		{"INFO", init, "nccltune: rule 4 (line 6): allgather 0 - * * ring * 0"},
		{"INFO", init, "nccltune: rule 5 (line 7): broadcast 0 - * * * * 2"},
		{"INFO", init, "nccltune: rule 6 (line 8): reduce 0 - * * collnet_chain simple 0"},
		{"INFO", init, "nccltune: rule 7 (line 9): reducescatter 0 - * * nvls simple 8"},
		{"INFO", tuning, "nccltune: rule 1 (allreduce 0-65535) -> tree/ll"},
		{"INFO", tuning, "nccltune: rule 2 (allreduce 65536-inf) -> ring/simple channels 16"},
		{"INFO", tuning, "nccltune: rule 4 (allgather 0-inf) -> ring/ll128"},
		{"INFO", tuning, "nccltune: rule 5 (broadcast 0-inf) -> NCCL's algorithm and protocol channels 2"},
		{"INFO", tuning, "nccltune: rule 6 (reduce 0-inf): collnet_chain/simple is not available, NCCL's choice stands (logged once)"},
		{"INFO", tuning, "nccltune: rule 7 (reducescatter 0-inf) -> nvls/simple, NCCL's channels (it runs nvls on exactly the 8 given, set up or not)"},
	}
	if !slices.Equal(out.logs, want) {
		t.Errorf("log:\n got %+v\nwant %+v", out.logs, want)
	}
}

func TestVersions(t *testing.T) {
	asan, _ := built(t)
	path := writeRules(t, rules("allreduce 0 - 2 16 ring simple 16", "allgather 0 - 2 16 * ll 0"))
	want := []string{"ring/simple=0, channels 16", "tree/ll=0, channels untouched", untouched}
	for _, v := range []int{4, 5, 6} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			out := runHarness(t, asan, withRules(path), comm{version: v, nodes: 2, ranks: 16},
				query{"allreduce", 1 << 20, nil}, query{"allgather", 1, nil}, query{"broadcast", 1, nil})
			if !slices.Equal(out.results, want) {
				t.Errorf("results %q, want %q", out.results, want)
			}
			if !slices.Contains(out.lines, "plugin nccltune") {
				t.Errorf("no \"plugin nccltune\" line in %q", out.lines)
			}
			if v == 6 && !slices.Contains(out.lines, "chunksize none") {
				t.Errorf("v6 should leave getChunkSize NULL: %q", out.lines)
			}
		})
	}
}

// Threads that share a communicator's context see the same results, and
// each rule's first application is logged once, not once per thread. Under
// the thread sanitizer, a data race fails the test even where this run's
// timing hid it.
func TestConcurrentCalls(t *testing.T) {
	asan, tsan := built(t)
	checkSanitized(t, tsan, "__tsan_init")
	path := writeRules(t, rules("allreduce 0 - * * ring simple 16", "allgather 0 - * * nvls ll 0"))
	var q []query
	for range 50 {
		q = append(q, query{"allreduce", 1, nil}, query{"allgather", 1, nil})
	}
	for _, p := range []pair{asan, tsan} {
		out := runHarness(t, p, withRules(path), comm{version: 5, nodes: 2, ranks: 16, threads: 8}, q...)
		for _, re := range []string{`^nccltune: rule 1 \(.*\) -> ring/simple`, `^nccltune: rule 2 \(.*\): nvls/ll is not available`} {
			if m := out.messages(re); len(m) != 1 {
				t.Errorf("%s: %d messages match %s, want 1: %q", p.harness, len(m), re, m)
			}
		}
	}
}

func TestMalformed(t *testing.T) {
	asan, _ := built(t)
	cases := []struct {
		name, content string
		line          int
		reason        string
	}{
		{"empty", "", 1, `end of file before the "nccltune-rules 1" line`},
		{"comments only", "# a\n\n# b\n", 3, `end of file before the "nccltune-rules 1" line`},
		{"blank lines only", "\n\n\n\n", 4, `end of file before the "nccltune-rules 1" line`},
		{"blanks and tabs, no last newline", "\n \t\n\t", 3, `end of file before the "nccltune-rules 1" line`},
		{"one newline", "\n", 1, `end of file before the "nccltune-rules 1" line`},
		{"no header", "allreduce 0 - * * ring simple 0\n", 1, `the first line must be "nccltune-rules 1"`},
		{"header after a rule", "# x\nallreduce 0 - * * ring simple 0\nnccltune-rules 1\n", 2, `the first line must be "nccltune-rules 1"`},
		{"another version", "nccltune-rules 2\n", 1, `rules version "2" is not supported (this plugin reads version 1)`},
		{"header with more", "nccltune-rules 1 2\n", 1, `the first line must be "nccltune-rules 1"`},
		{"header in capitals", "NCCLTUNE-RULES 1\n", 1, `the first line must be`},
		{"header twice", "nccltune-rules 1\nnccltune-rules 1\n", 2, `2 fields, want 8`},
		{"missing fields", rules("allreduce 0 - * * ring simple"), 2, "7 fields, want 8: collective min_bytes max_bytes nodes ranks algorithm protocol channels"},
		{"extra fields", rules("allreduce 0 - * * ring simple 0 0"), 2, "more than 8 fields, want 8"},
		{"many extra fields", rules("allreduce 0 - * * ring simple 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"), 2, "more than 8 fields, want 8"},
		{"unknown collective", rules("allreduc 0 - * * ring simple 0"), 2, `unknown collective "allreduc" (want one of: broadcast reduce allgather reducescatter allreduce sendrecv send recv alltoall)`},
		{"collective in capitals", rules("AllReduce 0 - * * ring simple 0"), 2, `collective "AllReduce" must be lower case: allreduce`},
		{"collective *", rules("* 0 - * * ring simple 0"), 2, `unknown collective "*"`},
		{"unknown algorithm", rules("allreduce 0 - * * rings simple 0"), 2, `unknown algorithm "rings" (want one of: tree ring collnet_direct collnet_chain nvls nvls_tree pat *)`},
		{"algorithm in capitals", rules("allreduce 0 - * * NVLS_TREE simple 0"), 2, `algorithm "NVLS_TREE" must be lower case: nvls_tree`},
		{"unknown protocol", rules("allreduce 0 - * * ring ll256 0"), 2, `unknown protocol "ll256" (want one of: ll ll128 simple *)`},
		{"protocol in capitals", rules("allreduce 0 - * * ring LL128 0"), 2, `protocol "LL128" must be lower case: ll128`},
		{"negative size", rules("allreduce -1 - * * ring simple 0"), 2, `min_bytes "-1" is not a non-negative decimal integer`},
		{"signed size", rules("allreduce +1 - * * ring simple 0"), 2, `min_bytes "+1" is not a non-negative decimal integer`},
		{"hex size", rules("allreduce 0x10 - * * ring simple 0"), 2, `min_bytes "0x10" is not`},
		{"size with a unit", rules("allreduce 0 64K * * ring simple 0"), 2, `max_bytes "64K" is not`},
		{"- for min", rules("allreduce - - * * ring simple 0"), 2, `min_bytes "-" is not`},
		{"* for max", rules("allreduce 0 * * * ring simple 0"), 2, `max_bytes "*" is not`},
		{"size overflow", rules("allreduce 0 18446744073709551616 * * ring simple 0"), 2, "max_bytes 18446744073709551616 is too large (at most 18446744073709551615)"},
		{"huge size", rules("allreduce 99999999999999999999999999999999999999999999999999 - * * ring simple 0"), 2, "min_bytes " + strings.Repeat("9", 40) + " is too large"},
		{"min above max", rules("allreduce 100 99 * * ring simple 0"), 2, "min_bytes 100 is above max_bytes 99"},
		{"zero nodes", rules("allreduce 0 - 0 * ring simple 0"), 2, "nodes must be positive or *, got 0"},
		{"zero ranks", rules("allreduce 0 - * 0 ring simple 0"), 2, "ranks must be positive or *, got 0"},
		{"negative ranks", rules("allreduce 0 - * -8 ring simple 0"), 2, `ranks "-8" is not a non-negative decimal integer`},
		{"nodes overflow", rules("allreduce 0 - 18446744073709551616 * ring simple 0"), 2, "nodes 18446744073709551616 is too large"},
		{"channels above 64", rules("allreduce 0 - * * ring simple 65"), 2, "channels 65 is too large (at most 64)"},
		{"channels far above 64", rules("allreduce 0 - * * ring simple 4294967297"), 2, "channels 4294967297 is too large (at most 64)"},
		{"negative channels", rules("allreduce 0 - * * ring simple -1"), 2, `channels "-1" is not a non-negative decimal integer`},
		{"channels *", rules("allreduce 0 - * * ring simple *"), 2, `channels "*" is not`},
		{"a bad line after good ones", rules("allreduce 0 - * * ring simple 0", "allgather 0 - * * ring simple 0", "", "# x", "reduce 0 - * * ring simple x"), 6, `channels "x" is not`},
		{"NUL byte", rules("allreduce 0 - * * ring simple 0", "allgather 0 - * * ring\x00simple 0"), 3, "NUL byte"},
		{"NUL byte in a comment", "nccltune-rules 1\n# \x00\n", 2, "NUL byte"},
		{"CR inside a line", rules("allreduce 0 - * * ring\rsimple 0"), 2, "control character 0x0d"},
		{"CR before a token", rules("allreduce 0 - * * \rring simple 0"), 2, "control character 0x0d"},
		{"an escape sequence", rules("allreduce 0 - * * \x1b[2Jring simple 0"), 2, "control character 0x1b"},
		{"a control character in a comment", rules("allreduce 0 - * * ring simple 0 # \x1b]0;x\x07"), 2, "control character 0x1b"},
		{"vertical tab", rules("allreduce\v0 - * * ring simple 0"), 2, "control character 0x0b"},
		{"DEL", rules("allreduce 0 - * * ring\x7f simple 0"), 2, "control character 0x7f"},
		{"a long token cut inside a character", rules("allreduce 0 - * * r" + strings.Repeat("é", 30) + " simple 0"), 2, `unknown algorithm "r` + strings.Repeat("é", 19) + `" (want`},
		{"a long token of bytes that are not UTF-8", rules(strings.Repeat("\xff", 50) + " 0 - * * ring simple 0"), 2, `unknown collective "` + strings.Repeat(`\xff`, 40) + `" (want one of: broadcast reduce allgather reducescatter allreduce sendrecv send recv alltoall)`},
		{"a token of bytes that are not UTF-8", rules("allreduce 0 - * * ring\xff\xfe simple 0"), 2, `unknown algorithm "ring\xff\xfe" (want`},
		{"a long token", rules("allreduce 0 - * * " + strings.Repeat("r", 100000) + " simple 0"), 2, `unknown algorithm "` + strings.Repeat("r", 40) + `" (want`},
		{"non-ASCII", rules("allreduce 0 - * * ríng simple 0"), 2, `unknown algorithm "ríng"`},
		{"a C1 control character", rules("allreduce 0 - * * ring\u009b2J simple 0"), 2, `unknown algorithm "ring\xc2\x9b2J" (want`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeRules(t, tc.content)
			checkRefused(t, asan, path, fmt.Sprintf("nccltune: %s:%d: %s", path, tc.line, tc.reason))
		})
	}
}

// checkRefused checks that the plugin warns with want (a prefix of the
// message) and then applies no rule at all.
func checkRefused(t *testing.T, p pair, path, want string) {
	t.Helper()
	var q []query
	for coll := range collectives {
		q = append(q, query{coll, 1, nil}, query{coll, 1 << 40, nil})
	}
	out := runHarness(t, p, withRules(path), defaultComm, q...)
	if w := out.warnings(); len(w) != 1 || !strings.HasPrefix(w[0], want) {
		t.Errorf("warnings %q, want one that starts %q", w, want)
	} else if !strings.HasSuffix(w[0], "; ignoring the file, NCCL makes every choice") && !strings.HasSuffix(w[0], "; NCCL makes every choice") {
		t.Errorf("warning %q does not say that NCCL chooses", w[0])
	}
	if m := out.messages("^nccltune: (loaded|rule)"); len(m) > 0 {
		t.Errorf("a refused file logged %q", m)
	}
	for i, r := range out.results {
		if r != untouched {
			t.Errorf("query %v: %s, want %s", q[i], r, untouched)
		}
	}
}

func TestUnreadable(t *testing.T) {
	asan, _ := built(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	large := filepath.Join(dir, "large")
	if err := os.WriteFile(large, []byte(rules(strings.Repeat("# padding\n", 1<<17))), 0o644); err != nil {
		t.Fatal(err)
	}
	cannot := func(path, reason string) string {
		return fmt.Sprintf("nccltune: cannot read rules file %s: %s", path, reason)
	}
	cases := []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "missing"), cannot(filepath.Join(dir, "missing"), "No such file or directory")},
		{"directory", dir, cannot(dir, "Is a directory")},
		{"FIFO", fifo, cannot(fifo, "not a regular file")},
		{"larger than 1 MiB", large, cannot(large, "larger than 1048576 bytes")},
		// A device is read as a file is, and never for long.
		{"empty device", os.DevNull, "nccltune: " + os.DevNull + ":1: end of file before"},
		{"endless device", "/dev/zero", cannot("/dev/zero", "larger than 1048576 bytes")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkRefused(t, asan, tc.path, tc.want)
		})
	}
	// Just under the limit is fine, however long its lines.
	path := writeRules(t, rules("#"+strings.Repeat("x", 1<<20-100), "allreduce 0 - * * ring simple 2"))
	if out := runHarness(t, asan, withRules(path), defaultComm, query{"allreduce", 1, nil}); out.results[0] != "ring/simple=0, channels 2" || len(out.warnings()) > 0 {
		t.Errorf("a file of long lines: %q, warnings %q", out.results, out.warnings())
	}
}

// TestRefusedOncePerProcess: every communicator of a process (a framework
// makes several) reads the file, but a file the plugin refuses is one WARN
// per process; the later communicators say it at INFO, and all leave NCCL's
// choice alone. A good file still loads for each.
func TestRefusedOncePerProcess(t *testing.T) {
	asan, _ := built(t)
	dir := t.TempDir()
	four := comm{version: 5, nodes: 2, ranks: 16, comms: 4}
	for _, tc := range []struct{ name, path, message string }{
		{"malformed", writeRules(t, rules("allreduce 0 - * * rings simple 0")), `:2: unknown algorithm "rings"`},
		{"missing", filepath.Join(dir, "missing"), "cannot read rules file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runHarness(t, asan, withRules(tc.path), four, query{"allreduce", 1, nil})
			if w := out.warnings(); len(w) != 1 || !strings.Contains(w[0], tc.message) {
				t.Errorf("warnings %q, want one with %q", w, tc.message)
			}
			if m := out.messages(regexp.QuoteMeta(tc.message)); len(m) != 4 {
				t.Errorf("%d messages with %q, want one per communicator: %q", len(m), tc.message, m)
			}
			if out.results[0] != untouched {
				t.Errorf("%s, want %s", out.results[0], untouched)
			}
		})
	}
	out := runHarness(t, asan, withRules(writeRules(t, rules("allreduce 0 - * * ring simple 2"))), four, query{"allreduce", 1, nil})
	if m := out.messages("^nccltune: loaded "); len(m) != 4 || out.results[0] != "ring/simple=0, channels 2" {
		t.Errorf("a good file: %d loaded lines, want 4; %s", len(m), out.results[0])
	}
}

func TestRulesUnset(t *testing.T) {
	asan, _ := built(t)
	want := []logLine{{"INFO", 0x41, "nccltune: NCCLTUNE_RULES is not set: NCCL makes every choice"}}
	for _, env := range [][]string{nil, withRules("")} {
		out := runHarness(t, asan, env, defaultComm, query{"allreduce", 100, nil})
		if !slices.Equal(out.logs, want) || out.results[0] != untouched {
			t.Errorf("with %q: log %+v, results %q; want log %+v and %q", env, out.logs, out.results, want, untouched)
		}
	}
}

// TestNames checks the names Go hands to exports against NCCL's order
// (restated above) and against the tables the C plugin parses with.
func TestNames(t *testing.T) {
	src, err := os.ReadFile("src/nccltune_tuner.c")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		prefix    string
		got, want []string
	}{{"NCCL_ALGO_", Algorithms, algorithms}, {"NCCL_PROTO_", Protocols, protocols}} {
		var inC []string
		for _, m := range regexp.MustCompile(`\[`+tc.prefix+`[A-Z0-9_]+\] = "([a-z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
			inC = append(inC, m[1])
		}
		if !slices.Equal(tc.got, tc.want) || !slices.Equal(inC, tc.want) {
			t.Errorf("%s names: Go %q, the C plugin %q, NCCL's order %q", tc.prefix, tc.got, inC, tc.want)
		}
	}
}

func TestBuild(t *testing.T) {
	cc := compiler(t)
	dir := filepath.Join(t.TempDir(), "out")
	lib, err := Build(dir, cc)
	if err != nil {
		t.Fatal(err)
	}
	if lib != filepath.Join(dir, LibraryName) {
		t.Errorf("Build returned %s, want %s", lib, filepath.Join(dir, LibraryName))
	}
	if got, want := exported(t, lib), []string{"ncclTunerPlugin_v4", "ncclTunerPlugin_v5", "ncclTunerPlugin_v6"}; !slices.Equal(got, want) {
		t.Errorf("%s exports %q, want %q", lib, got, want)
	}
	asan, _ := built(t)
	out := runHarness(t, pair{asan.harness, lib}, withRules(writeRules(t, rules("allreduce 0 - 2 16 tree simple 3"))), defaultComm, query{"allreduce", 1, nil})
	if want := "tree/simple=0, channels 3"; out.results[0] != want {
		t.Errorf("the built library: %s, want %s", out.results[0], want)
	}
	// A second build in the same place rebuilds rather than keeping a stale library.
	if _, err := Build(dir, cc); err != nil {
		t.Fatal(err)
	}
	// An empty folder (--out "") is the current one.
	t.Chdir(t.TempDir())
	if lib, err := Build("", cc); err != nil || lib != LibraryName {
		t.Errorf("Build in the current folder: %s, %v", lib, err)
	}
}

// TestLoadsOnOlderGlibc: the library is often built on one system (a login
// node, the newest image) and loaded on another (a job's container); a
// symbol of a newer glibc than the job's makes NCCL fail to load it, which
// NCCL logs at INFO only, and the job runs untuned. The plugin uses nothing
// newer than glibc 2.17 (CentOS 7, the oldest NCCL's builds support).
func TestLoadsOnOlderGlibc(t *testing.T) {
	lib, err := Build(t.TempDir(), compiler(t))
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.ImportedSymbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		v, _ := strings.CutPrefix(s.Version, "GLIBC_2.")
		minor, _, _ := strings.Cut(v, ".")
		if n, err := strconv.Atoi(minor); err == nil && n > 17 {
			t.Errorf("%s needs %s@%s: a job whose glibc is older cannot load it", lib, s.Name, s.Version)
		}
	}
}

// TestBuildKeepsOthersFiles: --out defaults to ".", where a project's own
// Makefile may be; Build refuses to replace a file that is not the
// plugin's, and writes nothing there.
func TestBuildKeepsOthersFiles(t *testing.T) {
	cc := compiler(t)
	for _, f := range []struct{ name, mine string }{
		{"Makefile", "# my project\nall:\n\t./train\n"},
		{"src/tuner_abi.h", "# my project\nall:\n\t./train\n"},
		// A project's own files may name nccltune, and are no less its own.
		{"Makefile", "# trains with the NCCL settings nccltune found\ntune:\n\tnccltune run space.toml\n"},
		{"src/nccltune_tuner.c", "/* my fork of nccltune's plugin */\n"},
	} {
		name, mine := f.name, f.mine
		dir := t.TempDir()
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(mine), 0o644)
		_, err := Build(dir, cc)
		if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != mine {
			t.Errorf("%s of %q: replaced (%v)", name, mine, err)
		} else if err == nil || !strings.Contains(err.Error(), "not the plugin's") {
			t.Errorf("%s of %q: %v, want a refusal", name, mine, err)
		}
		if _, err := os.Stat(filepath.Join(dir, LibraryName)); err == nil {
			t.Errorf("%s: built the library beside another's file", name)
		}
	}
}

// TestBuildWithoutMake: Build needs a C compiler alone; a make that fails
// first on the PATH changes nothing.
func TestBuildWithoutMake(t *testing.T) {
	cc := compiler(t)
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "make"), []byte("#!/bin/sh\necho 'make was run' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	lib, err := Build(t.TempDir(), cc)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := exported(t, lib), []string{"ncclTunerPlugin_v4", "ncclTunerPlugin_v5", "ncclTunerPlugin_v6"}; !slices.Equal(got, want) {
		t.Errorf("%s exports %q, want %q", lib, got, want)
	}
}

// TestBuildFlagsMatchMakefile: Build compiles as `make` in plugin/ does.
func TestBuildFlagsMatchMakefile(t *testing.T) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name  string
		flags []string
	}{{"STD_CFLAGS :=", stdFlags}, {"CFLAGS ?=", optFlags}, {"SO_FLAGS :=", soFlags}} {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(v.name) + `(.*)$`).FindSubmatch(mk)
		if m == nil {
			t.Fatalf("the Makefile sets no %s", v.name)
		}
		if got := strings.Fields(strings.ReplaceAll(string(m[1]), "$(LIB)", LibraryName)); !slices.Equal(got, v.flags) {
			t.Errorf("Makefile %s %q, Build uses %q", v.name, got, v.flags)
		}
	}
}

func TestBuildFails(t *testing.T) {
	compiler(t)
	broken := filepath.Join(t.TempDir(), "broken-cc")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho 'broken-cc: cannot compile' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cc, want string }{
		{broken, "broken-cc: cannot compile"},
		{"no-such-compiler-nccltune", `building the plugin needs no-such-compiler-nccltune: exec: "no-such-compiler-nccltune": executable file not found`},
	} {
		_, err := Build(t.TempDir(), tc.cc)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build with %s: %v, want an error with %q", tc.cc, err, tc.want)
		}
	}
}

// TestRebuildReplacesTheLibraryWhole: jobs load the library from where
// Build leaves it, maybe while it builds again (another node of a shared
// file system starting): a rebuild that fails part way, as a linker killed
// or out of disk space, keeps the library that was there, and leaves no
// half-written file behind, under that name or another.
func TestRebuildReplacesTheLibraryWhole(t *testing.T) {
	cc := compiler(t)
	dir := t.TempDir()
	lib, err := Build(dir, cc)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(lib)
	fake := t.TempDir()
	for _, tc := range []struct{ name, script string }{
		{"writes half and fails", `while [ $# -gt 0 ]; do [ "$1" = -o ] && printf '\177ELF half' > "$2"; shift; done; exit 1`},
		{"is killed", `while [ $# -gt 0 ]; do [ "$1" = -o ] && printf '\177ELF half' > "$2"; shift; done; kill -9 $$`},
	} {
		broken := filepath.Join(fake, strings.ReplaceAll(tc.name, " ", "-"))
		os.WriteFile(broken, []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755)
		if _, err := Build(dir, broken); err == nil {
			t.Errorf("a compiler that %s: no error", tc.name)
		}
		if got, _ := os.ReadFile(lib); !slices.Equal(got, want) {
			t.Errorf("a compiler that %s: %s holds %d bytes, %q..., not the library built before", tc.name, lib, len(got), got[:min(len(got), 16)])
		}
	}
	// The library's mode is any new file's, the umask's part taken, as the linker makes it.
	probe, _ := os.OpenFile(filepath.Join(t.TempDir(), "probe"), os.O_CREATE|os.O_WRONLY, 0o777)
	probeInfo, _ := probe.Stat()
	probe.Close()
	if fi, err := os.Stat(lib); err != nil || fi.Mode().Perm() != probeInfo.Mode().Perm() {
		t.Errorf("%s: %v, %v; want the mode %v", lib, fi.Mode(), err, probeInfo.Mode())
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"Makefile", LibraryName, "src"}; !slices.Equal(names, want) {
		t.Errorf("%s holds %q, want %q", dir, names, want)
	}
}

// exported returns the sorted names of the symbols lib defines for others.
func exported(t *testing.T, lib string) []string {
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_BIND(s.Info) == elf.STB_GLOBAL {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return names
}

// TestLibFuzzer builds the rules parser's libFuzzer target (`make fuzz`,
// test/fuzz_rules.c) with clang and runs it for ten seconds on the seeds of
// testdata/fuzz/FuzzRules: tens of thousands of inputs a second in one
// process, with coverage of the C parser, where FuzzRules runs about one a
// second through the harness and sees no coverage. Without clang or its
// libFuzzer the test skips, except in CI; with -short it skips.
func TestLibFuzzer(t *testing.T) {
	if testing.Short() {
		t.Skip("fuzzes for 10 s")
	}
	fuzzCC := cmp.Or(os.Getenv("FUZZ_CC"), "clang")
	need(t, fuzzCC)
	need(t, "make")
	dir := t.TempDir()
	if out, err := exec.Command("make", "-s", "O="+dir, "FUZZ_CC="+fuzzCC, "fuzz").CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("make fuzz: %v\n%s", err, out)
		}
		t.Skipf("%s cannot build a libFuzzer target here: %v\n%s", fuzzCC, err, out)
	}
	corpus := filepath.Join(dir, "corpus")
	if err := os.Mkdir(corpus, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, seed := range goSeeds(t, "testdata/fuzz/FuzzRules") {
		if err := os.WriteFile(filepath.Join(corpus, fmt.Sprintf("seed%d", i)), seed, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "fuzzbin", "fuzz_rules"), "-max_total_time=10", "-timeout=10",
		"-rss_limit_mb=2048", "-max_len=4096", "-artifact_prefix="+dir+"/", corpus).CombinedOutput()
	if err != nil {
		var found []string
		for _, prefix := range []string{"crash-", "leak-", "timeout-", "oom-", "slow-unit-"} {
			paths, _ := filepath.Glob(filepath.Join(dir, prefix+"*"))
			for _, p := range paths {
				data, _ := os.ReadFile(p)
				found = append(found, fmt.Sprintf("%s: %q", filepath.Base(p), data))
			}
		}
		tail := out[max(0, len(out)-4000):]
		t.Fatalf("the fuzzer failed: %v; inputs (add each to testdata/fuzz/FuzzRules once fixed):\n%s\n%s", err, strings.Join(found, "\n"), tail)
	}
	if m := regexp.MustCompile(`Done (\d+) runs in (\d+) second`).FindSubmatch(out); m != nil {
		t.Logf("%s inputs in %s s", m[1], m[2])
	}
}

// goSeeds reads the inputs of a Go fuzz corpus directory: files of "go test
// fuzz v1" and one []byte("...").
func goSeeds(t *testing.T, dir string) [][]byte {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var seeds [][]byte
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`^go test fuzz v1\n\[\]byte\((.*)\)\n?$`).FindSubmatch(data)
		if m == nil {
			t.Fatalf("%s: not a Go fuzz corpus file of one []byte", e.Name())
		}
		seed, err := strconv.Unquote(string(m[1]))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		seeds = append(seeds, []byte(seed))
	}
	if len(seeds) == 0 {
		t.Fatalf("no seeds in %s", dir)
	}
	return seeds
}

var keptRE = regexp.MustCompile(`^nccltune: rule \d+ \(line \d+\): (.*)$`)

// FuzzRules loads fuzzed rules files through the real library and the
// harness, as NCCL would: the plugin must neither crash, hang nor upset the
// sanitizers; it either refuses the file with one warning or loads it, and
// then the rules it reports, written out as a file, load as the same rules.
// Its seeds are in testdata/fuzz/FuzzRules, which go test runs every time.
// To fuzz, use the libFuzzer target (TestLibFuzzer, `make fuzz`): this one
// starts a process per input and cannot see the C parser's coverage.
func FuzzRules(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		asan, _ := built(t)
		kept := func(content []byte) ([]string, bool) {
			out := runHarness(t, asan, withRules(writeRules(t, string(content))), defaultComm)
			warnings, loaded := out.warnings(), out.messages("^nccltune: loaded ")
			if len(warnings)+len(loaded) != 1 {
				t.Fatalf("want one warning or one loaded line:\n%s", strings.Join(out.lines, "\n"))
			}
			var found []string
			for _, l := range out.logs {
				if m := keptRE.FindStringSubmatch(l.msg); m != nil {
					found = append(found, m[1])
				}
			}
			return found, len(loaded) == 1
		}
		first, ok := kept(data)
		if !ok {
			return
		}
		again, ok := kept([]byte(rules(first...)))
		if !ok || !slices.Equal(first, again) {
			t.Fatalf("rules %q, written out and loaded again: %q (loaded: %v)", first, again, ok)
		}
	})
}

// TestBuildIntoAFile: --out naming a file was refused as "FILE/Makefile is
// not the plugin's", a Makefile that is not there; it says what is wrong.
func TestBuildIntoAFile(t *testing.T) {
	compiler(t)
	file := filepath.Join(t.TempDir(), "lib")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(file, ""); err == nil || strings.Contains(err.Error(), "is not the plugin's") || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Build into a file: %v, want it said to be no directory", err)
	}
}
