package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
)

// UserCommand runs the user's own program (a training script of Megatron-LM,
// DeepSpeed, JAX or their own) as written, and reads the objective from what
// it prints: the median of the values its metric matches, after the warm-up
// ones. A goal of "min" (a step time) is scored as its inverse, so that
// higher is better as for every benchmark.
type UserCommand struct {
	Argv   []string
	Metric space.Metric
	regex  *regexp.Regexp
	// label is the launcher's label before each rank's line, where
	// launcher.args ask for one (launcherLabel), its group the rank; nil
	// where there is none.
	label *regexp.Regexp
	// role is torchrun's prefix of a worker's line where launcher.args
	// name the workers' role (--role trainer: "[trainer3]:", read as
	// "[default3]:"); nil where they do not.
	role *regexp.Regexp
}

func newUserCommand(b space.BenchmarkSettings, l space.LauncherSettings) (Benchmark, error) {
	c := UserCommand{Argv: b.Command, Metric: b.Metric, label: launcherLabel(l)}
	if role := torchrunRole(l); role != "" && role != "default" {
		c.role = regexp.MustCompile(`\[` + regexp.QuoteMeta(role) + `(\d+\]:)`)
	}
	if b.Metric.Regex != "" {
		var err error
		if c.regex, err = regexp.Compile(b.Metric.Regex); err != nil {
			return nil, fmt.Errorf("benchmark.metric.regex: %w", err)
		}
	}
	return c, nil
}

// Labels that launchers put before each rank's line where asked, as
// nccl-tests' parser reads them too: srun --label's, Hydra -l's.
var (
	srunLabelRE  = regexp.MustCompile(`^` + nccltests.SrunLabel)
	hydraLabelRE = regexp.MustCompile(`^` + nccltests.HydraLabel)
)

// launcherLabel is the label launcher l puts before each rank's line, where
// its args ask for one (srun's -l or --label, Hydra's -l or -prepend-rank,
// in any case after any dashes); nil where they do not. Only then is a
// line's head read as a label: a program's own line may begin "3: ".
func launcherLabel(l space.LauncherSettings) *regexp.Regexp {
	srun := func(o space.SrunOption) bool { return o.Long == "label" }
	hydra := func(a string) bool {
		name := strings.TrimLeft(a, "-")
		return a != name && (strings.EqualFold(name, "l") || strings.EqualFold(name, "prepend-rank"))
	}
	switch {
	case l.Kind == "srun" && slices.ContainsFunc(space.SrunOptions(l.Args), srun):
		return srunLabelRE
	case l.Kind == "mpirun" && l.Flavor == "mpich" && slices.ContainsFunc(l.Args, hydra):
		return hydraLabelRE
	}
	return nil
}

// torchrunRole is the workers' role that launcher l's args give torchrun
// (--role NAME, --role=NAME, or an abbreviation argparse takes, "--rol"),
// the last one; "" where none does.
func torchrunRole(l space.LauncherSettings) string {
	role := ""
	for i, a := range l.Args {
		name, value, attached := strings.Cut(a, "=")
		if l.Kind != "torchrun" || len(name) < len("--ro") || !strings.HasPrefix("--role", name) {
			continue
		}
		if !attached && i+1 < len(l.Args) {
			value = l.Args[i+1]
		}
		role = value
	}
	return role
}

// cutLabel is line less the launcher's label at its head (c.label), and the
// label's rank; "" and line where it has none. torchrun's prefixes of a
// role of launcher.args are read as the default role's, which the
// workers' tags are known by (rankRE).
func (c UserCommand) cutLabel(line string) (rank, rest string) {
	if c.role != nil && strings.Contains(line, "]:") {
		line = c.role.ReplaceAllString(line, "[default$1")
	}
	if c.label != nil {
		if m := c.label.FindStringSubmatchIndex(line); m != nil {
			return line[m[2]:m[3]], line[m[1]:]
		}
	}
	return "", line
}

// Command is the user's command line, whatever the plan.
func (c UserCommand) Command(Plan) []string { return c.Argv }

// Signs of failure in a training program's output, most specific first:
// NCCL's and CUDA's own words, and PyTorch's.
var commandFailures = []struct {
	kind FailureKind
	re   *regexp.Regexp
}{
	{FailOOM, regexp.MustCompile(`CUDA out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY|RESOURCE_EXHAUSTED`)},
	{FailNCCL, regexp.MustCompile(`NCCL error|ncclInternalError|ncclSystemError|ncclInvalidUsage|ncclUnhandledCudaError|ncclRemoteError|unhandled (system|cuda) error|DistBackendError`)},
}

// Read finds the metric's values in the lines the runner kept (Keep: every
// one of the whole output, however long). A program that failed is
// classified by the signs in its output (a training log mentions NCCL and
// memory harmlessly, so a clean exit is not searched for them).
func (c UserCommand) Read(_ Plan, out Output) (*Measurement, *Failure) {
	if f := exitFailure(out.Exit, out.detail(), func(int) *Failure { return nil }); f != nil {
		for _, sign := range commandFailures {
			if line := firstMatch(out.Text, sign.re); line != "" {
				// The detail may be the line itself, less a rank's prefix.
				// Python 3.13's colours (sgrRE) are no part of a reason.
				line = sgrRE.ReplaceAllString(line, "")
				if !strings.Contains(f.Reason, stripPyPrefixes(line)) {
					f.Reason += "; " + line
				}
				return nil, &Failure{sign.kind, f.Reason}
			}
		}
		return nil, f
	}
	if out.Dropped > 0 {
		// The median of the first values alone is no measurement of the run.
		return nil, &Failure{FailUnparsable, fmt.Sprintf("the output has more lines of the metric (%s) than a trial keeps (%d MiB of them), and the %d past them would not count: give a metric that matches only the step's lines",
			c.Metric, maxOutput>>20, out.Dropped)}
	}
	perRank, others, f := c.values(out.Kept)
	if f != nil {
		return nil, f
	}
	var values []float64
	total := 0
	for _, vs := range perRank {
		total += len(vs)
		if len(vs) > c.Metric.Skip {
			values = append(values, vs[c.Metric.Skip:]...)
		}
	}
	if len(values) == 0 {
		reason := fmt.Sprintf("the output has %d values of the metric (%s) from %d rank(s)", total, c.Metric, len(perRank))
		if c.Metric.Skip > 0 {
			reason += fmt.Sprintf(", and the first %d of each rank's are warm-up", c.Metric.Skip)
		}
		if others.n > 0 {
			// A unit or a locale's decimal comma in the regex's group.
			reason += fmt.Sprintf("; %s of it held no number, such as %q", text.Count(others.n, "match", "matches"), others.first)
		}
		return nil, &Failure{FailUnparsable, reason}
	}
	v := median(values)
	if c.Metric.Goal == "min" {
		v = 1 / v
	}
	return &Measurement{Value: v}, nil
}

// Keep keeps the lines the metric matches, for Read; those where it is
// ambiguous too, so that Read fails the trial on them.
func (c UserCommand) Keep(line string) bool {
	ms, err := c.lineMatches(line)
	return err != nil || len(ms) > 0
}

// rankMatch is the metric's texts on a part of a line (match), and the
// rank that printed it.
type rankMatch struct {
	rank string
	raws []string
}

// lineMatches are the metric's texts on printed, a line of the output, per
// part of it (rankLines), read less the launcher's label (cutLabel). Where
// the metric reads none there, it reads the line as printed: a regex that
// names the label or torchrun's role ("^0: step", rank 0's lines under
// srun --label) is of the whole line, as one naming "[rank0]:" is (match).
func (c UserCommand) lineMatches(printed string) ([]rankMatch, error) {
	label, tagged := c.cutLabel(printed)
	parts := rankLines(tagged)
	if parts == nil {
		parts = []string{tagged}
	}
	rank := func(line string) string {
		if label != "" { // the launcher's rank, and the program's own tag under it
			return label + "/" + lineRank(line)
		}
		return lineRank(line)
	}
	var out []rankMatch
	for _, line := range parts {
		raws, err := c.match(line)
		if err != nil {
			return nil, err
		}
		if len(raws) > 0 {
			out = append(out, rankMatch{rank(line), raws})
		}
	}
	if out != nil || tagged == printed {
		return out, nil
	}
	raws, err := c.match(printed)
	if err != nil || len(raws) == 0 {
		return nil, err
	}
	return []rankMatch{{rank(tagged), raws}}, nil
}

// rankRE finds which rank printed a line, where a launcher says: torchrun's
// "[rank3]:" or "[default3]:", mpirun --tag-output's "[1,3]<stdout>:",
// after --timestamp-output's time where given ("Sun Dec  6 14:45:56
// 2026[1,3]<stdout>:", as ctime writes it).
var rankRE = regexp.MustCompile(`^\[(?:rank|default)?(\d+)\]:|^` + nccltests.MPIRunTime + `?\[\d+,(\d+)\]<std(?:out|err)>:`)

// tagRE is a rank's tag (rankRE) anywhere in a line, but for a bare "[3]:",
// which a line's own text has ("gpu[3]: 5 ms").
var tagRE = regexp.MustCompile(`\[(?:rank|default)\d+\]:|` + nccltests.MPIRunTime + `?\[\d+,\d+\]<std(?:out|err)>:`)

// leadingTagsRE are the tags (tagRE) a line begins with.
var leadingTagsRE = regexp.MustCompile(`^(?:` + tagRE.String() + `)+`)

// rankLines are a tagged line cut where a rank's tag begins a part of it:
// ranks' lines run together under PYTHONUNBUFFERED=1 (a line and its
// newline written apart) are each tagged ("[default1]:step 7 ms:
// 0.41[default0]:step 7 ms: 0.40"). Each part is its rank's line, so that
// skip stays per rank; tags that follow each other ("[default0]:[rank0]: ")
// begin one part. (Open MPI's mpirun tags each chunk of a rank's output,
// not each line: the capture has joined each rank's chunks into its lines,
// one tag each.) An untagged line, or one of one part, is nil: most lines
// hold no second tag, and cost no regexp's run and no allocation (Keep
// reads every line).
func rankLines(line string) []string {
	if strings.Count(line, "]:")+strings.Count(line, "]<std") < 2 || !rankRE.MatchString(line) {
		return nil
	}
	var out []string
	start, end := 0, 0
	for _, loc := range tagRE.FindAllStringIndex(line, -1) {
		if loc[0] > end && loc[0] > start {
			out = append(out, line[start:loc[0]])
			start = loc[0]
		}
		end = loc[1]
	}
	return append(out, line[start:])
}

// values are the metric's values per rank, each in output order (lines
// without a rank's prefix are one rank's). A line whose text in the
// metric's place is no number (a version such as "1.2.3") does not match
// the metric and is passed over. A number must be decimal, as printf
// writes one (text.Decimal), and positive and finite, as a time or a rate
// is: one that is not ("0x1p3", "Inf", "1e400", "-3"), or a line that names
// the metric twice, fails the trial.
func (c UserCommand) values(lines []string) (map[string][]float64, passedOver, *Failure) {
	out, others := map[string][]float64{}, passedOver{}
	for _, line := range lines {
		ms, err := c.lineMatches(line)
		if err != nil {
			return nil, others, &Failure{FailUnparsable, fmt.Sprintf("the metric (%s) is ambiguous: %v", c.Metric, err)}
		}
		for _, m := range ms {
			for _, raw := range m.raws {
				if !isNumber(raw) {
					others.add(raw) // not the metric
					continue
				}
				v, err := text.Decimal(strings.TrimSpace(raw))
				if err != nil || !(v > 0) || v > 1e300 || v < 1e-300 {
					return nil, others, &Failure{FailImplausible, fmt.Sprintf("the metric (%s) read %q, not a positive number (finite and decimal, as printf writes one)", c.Metric, raw)}
				}
				out[m.rank] = append(out[m.rank], v)
			}
		}
	}
	return out, others, nil
}

// passedOver are the texts in the metric's place that were no number: how
// many, and the first, for the reason of a trial that read none that was.
type passedOver struct {
	n     int
	first string
}

func (p *passedOver) add(raw string) {
	if p.n++; p.n == 1 {
		p.first = raw
	}
}

// lineRank is the rank that printed line, where a launcher says; "" where not.
func lineRank(line string) string {
	if m := rankRE.FindStringSubmatch(line); m != nil {
		return m[1] + m[2]
	}
	return ""
}

// isNumber reports whether s reads as a number, to Go (which reads more
// forms than printf writes: the metric must fail on them, not pass them
// over) or as a decimal one.
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil || errors.Is(err, strconv.ErrRange)
}

// match returns the metric's texts on a line: the regex's group, or the
// JSON key's value on a line that is a JSON object, either after any
// prefix a launcher adds; none where the line is not the metric's. A line that
// gives the metric twice is an error: the regex matching two numbers
// ("time: 5 ms, data time: 1 ms"), or the key given twice in the object
// (encoding/json would keep the last). Ranks' lines run together
// (runTogether) are each read.
func (c UserCommand) match(line string) ([]string, error) {
	if c.regex != nil {
		// The regex is of the program's own lines: a launcher's tags,
		// which only some launchers and options add, are none of it;
		// but one that names a tag (^\[rank0\]: to take rank 0's lines)
		// is of the whole line.
		text := leadingTagsRE.ReplaceAllString(line, "")
		ms := c.regex.FindAllStringSubmatch(text, -1)
		if ms == nil && text != line {
			text = line
			ms = c.regex.FindAllStringSubmatch(text, -1)
		}
		if ms == nil {
			return nil, nil
		}
		var numbers []string
		for _, m := range ms {
			if isNumber(m[1]) {
				numbers = append(numbers, strings.TrimSpace(m[1]))
			}
		}
		switch {
		case len(numbers) > 1 && runTogether(text, len(numbers)) == nil:
			return nil, fmt.Errorf("its regex matches %d numbers on one line (%s): %q", len(numbers), strings.Join(numbers, ", "), line)
		case len(numbers) > 0:
			return numbers, nil
		}
		return []string{ms[0][1]}, nil
	}
	i := strings.IndexByte(line, '{')
	if i < 0 {
		return nil, nil
	}
	members, err := text.JSONMembers([]byte(quoteNonFinite(line[i:])))
	if err != nil {
		// Objects run together: each, where the line is lines of one form.
		// As many as the form repeats, not as the key is named: an object
		// may name it again ({"name": "ms", "ms": 0.5}).
		if strings.Count(line, strconv.Quote(c.Metric.JSON)) < 2 {
			return nil, nil
		}
		var out []string
		for _, l := range runTogether(line, 0) {
			vs, err := c.match(l)
			if err != nil || len(vs) != 1 {
				return nil, err
			}
			out = append(out, vs[0])
		}
		return out, nil
	}
	var values []json.RawMessage
	for _, m := range members {
		if m.Key == c.Metric.JSON {
			values = append(values, m.Value)
		}
	}
	switch {
	case len(values) == 0:
		return nil, nil
	case len(values) > 1:
		return nil, fmt.Errorf("its key %q is given %d times in one JSON object: %q", c.Metric.JSON, len(values), line)
	}
	var s string
	if json.Unmarshal(values[0], &s) == nil {
		return []string{s}, nil // a number written as a string
	}
	return []string{string(values[0])}, nil
}

// nonFinite are the bare words Python's json module writes for the floats
// JSON has no form of (json.dumps(float("nan"))).
var nonFinite = []string{"NaN", "-Infinity", "Infinity"}

// quoteNonFinite is s, a JSON text as Python writes it, with each of
// nonFinite outside a string quoted, so that it reads: a metric of one is a
// number but no plausible one, and fails as "nan" does under a regex, and
// another key's (a NaN loss) does not hide the metric's line.
func quoteNonFinite(s string) string {
	if !strings.Contains(s, "NaN") && !strings.Contains(s, "Infinity") {
		return s // most lines, which cost no copy
	}
	var b strings.Builder
	inString, escaped := false, false
next:
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString && escaped:
			escaped = false
		case inString:
			escaped, inString = c == '\\', c != '"'
		case c == '"':
			inString = true
		default:
			for _, word := range nonFinite {
				if strings.HasPrefix(s[i:], word) {
					b.WriteString(strconv.Quote(word))
					i += len(word) - 1
					continue next
				}
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// runTogether is line cut into the k lines of one form, their numbers
// aside, that it runs together ("step 7 ms: 0.43step 7 ms: 0.50"), nil
// where it is not (k of 1, or "time: 5 ms, data time: 1 ms", which names
// the metric twice in words of its own); k of 0 is as many as the line has.
// Under PYTHONUNBUFFERED=1, which
// containers often set, Python writes a line and its newline in two
// writes, and the ranks printing at once interleave theirs.
func runTogether(line string, k int) []string {
	if k == 1 || line == "" {
		return nil
	}
	form := digitsRE.ReplaceAllString(line, "0")
	if k == 0 { // as many as its shortest unit repeats: form is one of its rotations
		if k = len(form) / (strings.Index(form[1:]+form, form) + 1); k < 2 {
			return nil
		}
	}
	unit := len(form) / k
	if len(form)%k != 0 || strings.Repeat(form[:unit], k) != form {
		return nil
	}
	// Cut where the form's units begin: a run of digits is one byte of it.
	var out []string
	start, at := 0, 0
	for i := 0; i < len(line); at++ {
		if at > 0 && at%unit == 0 {
			out = append(out, line[start:i])
			start = i
		}
		if i++; line[i-1] >= '0' && line[i-1] <= '9' {
			for i < len(line) && line[i] >= '0' && line[i] <= '9' {
				i++
			}
		}
	}
	return append(out, line[start:])
}

var digitsRE = regexp.MustCompile(`[0-9]+`)

// median is the middle value, or the mean of the two in the middle.
func median(values []float64) float64 {
	v := slices.Sorted(slices.Values(values))
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// firstMatch is the first line of text that re matches, trimmed; "" if none.
func firstMatch(text []byte, re *regexp.Regexp) string {
	loc := re.FindIndex(text)
	if loc == nil {
		return ""
	}
	start := bytes.LastIndexByte(text[:loc[0]], '\n') + 1
	end := bytes.IndexByte(text[loc[0]:], '\n')
	if end < 0 {
		end = len(text) - loc[0]
	}
	return strings.TrimSpace(string(text[start : loc[0]+end]))
}
