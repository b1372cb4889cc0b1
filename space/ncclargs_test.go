package space

import (
	"reflect"
	"strings"
	"testing"
)

// TestNCCLTestsOptions reads nccl-tests' arguments as its getopt_long does.
func TestNCCLTestsOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []NCCLTestsOption
		err  string
	}{
		{nil, nil, ""},
		{[]string{"-S", "1", "-I0"}, []NCCLTestsOption{{"-S", "report_timestamps", "1"}, {"-I", "per_iter_timing", "0"}}, ""},
		{[]string{"-hC1"}, []NCCLTestsOption{{"-h", "help", ""}, {"-C", "report_cputime", "1"}}, ""},
		{[]string{"--report_t=1", "--nt", "2"}, []NCCLTestsOption{{"--report_t", "report_timestamps", "1"}, {"--nt", "nthreads", "2"}}, ""},
		{[]string{"--iters", "5"}, []NCCLTestsOption{{"--iters", "iters", "5"}}, ""}, // exact, though a prefix of none other
		{[]string{"file", "-Z", "-d", "half", "--", "-S", "1"}, []NCCLTestsOption{{"-d", "datatype", "half"}}, ""},
		{[]string{"--report", "1"}, nil, "--report is ambiguous"},
		{[]string{"-t"}, nil, "-t has no value"},
	} {
		got, err := NCCLTestsOptions(tc.args)
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) || tc.err == "" && (err != nil || !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("NCCLTestsOptions(%q) = %+v, %v; want %+v, %q", tc.args, got, err, tc.want, tc.err)
		}
	}
}

// TestHarmlessNCCLTestsArgs: options that leave the table as nccltune reads it load.
func TestHarmlessNCCLTestsArgs(t *testing.T) {
	args := `args = ["-S", "0", "-I0", "--report_cputime=0x0", "-d", "half", "-a", "1", "-M", "1", "-J", "out.json", "--nt", "2", "-G", "10"]`
	src := strings.Replace(hostileBase, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\n"+args, 1)
	if _, err := parseWithin(t, src); err != nil {
		t.Fatal(err)
	}
}
