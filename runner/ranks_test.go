package runner

import "testing"

// nccl-tests reads -t with getopt_long and strtol(v, NULL, 0): a run it
// starts with 2 threads must be held to the ranks of 2 threads, whichever
// spelling the space used, or every trial fails as unparsable.
func TestThreadsReadAsNCCLTestsDoes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 1},
		{[]string{"-t", "2"}, 2},
		{[]string{"-t2"}, 2},
		{[]string{"--nthreads", "2"}, 2},
		{[]string{"--nthreads=2"}, 2},
		{[]string{"--nthread", "2"}, 2}, // getopt_long's unambiguous prefixes
		{[]string{"--nt=2"}, 2},
		{[]string{"-t", "010"}, 8}, // strtol's base 0: octal
		{[]string{"-t", "0x4"}, 4},
		{[]string{"-t", "2", "-t", "4"}, 4}, // the last one counts
		{[]string{"--n", "2"}, 1},           // ambiguous (--ngpus): not threads
		{[]string{"-d", "float"}, 1},
		{[]string{"-t"}, 0},
		{[]string{"-t", "two"}, 0},
		{[]string{"-t", "0b10"}, 0}, // Go reads it, strtol does not: unknown
		{[]string{"-t", "1_0"}, 0},
	} {
		if got := threads(c.args); got != c.want {
			t.Errorf("threads(%q) = %d, want %d", c.args, got, c.want)
		}
	}
	for _, args := range [][]string{{"--nthread", "2"}, {"--nt=2"}, {"-t", "02"}} {
		b := NCCLTests{Ranks: 8, Args: args}
		if f := b.matchRanks(16); f != nil {
			t.Errorf("8 ranks launched with %q, 16 named: %v", args, f)
		}
		if f := b.matchRanks(8); f == nil {
			t.Errorf("8 ranks launched with %q, 8 named: accepted", args)
		}
	}
}
