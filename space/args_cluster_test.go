package space

import (
	"strings"
	"testing"
)

// TestSrunArgsInAClusterOfFlags: getopt reads "-ln16" as -l, then -n 16
// (srun's -l, -u, -v, ... take no value), so launcher.args may not give
// nccltune's -n, -N or -K after such flags either; a letter that takes a
// value ends the cluster ("-Jn16" is a job named n16).
func TestSrunArgsInAClusterOfFlags(t *testing.T) {
	const srun = "[launcher]\nkind = \"srun\"\nnodes = 1\nntasks_per_node = 8\n"
	for _, tc := range []struct {
		args    string
		refused bool
	}{
		{`["-ln16"]`, true},
		{`["-ul", "-n", "16"]`, true},
		{`["-vN2"]`, true},
		{`["-lK0"]`, true},
		{`["-lu"]`, false},
		{`["-Jn16"]`, false},
		{`["-wnode-K1"]`, false},
	} {
		src := strings.TrimSuffix(numNCCLTests, "\n") + "\n" + srun + "args = " + tc.args + "\n"
		_, err := parseWithin(t, src)
		if refused := err != nil && strings.Contains(err.Error(), "is set by nccltune"); refused != tc.refused {
			t.Errorf("launcher.args %s: refused %v, want %v (%v)", tc.args, refused, tc.refused, err)
		}
	}
}

// TestSrunArgsAsNccltunePassesThem: launcher.args that give srun's
// --export=ALL or --kill-on-bad-exit=1, as nccltune passes them, leave the
// step as it is and are accepted, in every spelling srun's getopt_long
// reads (the value attached or the next argument, the name abbreviated,
// ALL in any case, as srun 22.05 takes it); any other value of them is
// refused.
func TestSrunArgsAsNccltunePassesThem(t *testing.T) {
	const srun = "[launcher]\nkind = \"srun\"\nnodes = 1\nntasks_per_node = 8\n"
	for _, tc := range []struct {
		args    string
		refused bool
	}{
		{`["--export=ALL", "--mpi=pmix"]`, false},
		{`["-K"]`, false},
		{`["-K1"]`, false},
		{`["--kill-on-bad-exit"]`, false},
		{`["--kill-on-bad-exit=1"]`, false},
		{`["--export=ALL,NCCL_ALGO=Ring"]`, true},
		{`["--export=NONE"]`, true},
		{`["--export", "ALL"]`, false},
		{`["--export=all"]`, false},
		{`["--exp", "All"]`, false},
		{`["--exp", "ALL", "--mpi", "pmix"]`, false},
		{`["--expo=ALL"]`, false},
		{`["--export", "NONE"]`, true},
		{`["--exp", "ALL,NCCL_ALGO=Ring"]`, true},
		{`["-K0"]`, true},
		{`["--kill-on-bad-exit=0"]`, true},
	} {
		src := strings.TrimSuffix(numNCCLTests, "\n") + "\n" + srun + "args = " + tc.args + "\n"
		_, err := parseWithin(t, src)
		if refused := err != nil && strings.Contains(err.Error(), "is set by nccltune"); refused != tc.refused {
			t.Errorf("launcher.args %s: refused %v, want %v (%v)", tc.args, refused, tc.refused, err)
		}
	}
}

// TestSrunArgsValues: an option's value given as the next argument is
// that option's, as srun's getopt_long reads it, whatever it looks like
// ("-J -n16" names the job "-n16"), and is no option of its own; an option
// that takes no value leaves the next argument an option.
func TestSrunArgsValues(t *testing.T) {
	const srun = "[launcher]\nkind = \"srun\"\nnodes = 1\nntasks_per_node = 8\n"
	for _, tc := range []struct {
		args  string
		error string
	}{
		{`["-J", "-n16"]`, ""},
		{`["--job-name", "--nodes=2"]`, ""},
		{`["--comment", "-o"]`, ""},
		{`["--comm", "--output=x"]`, ""},
		{`["--label", "-N", "2"]`, "-N 2 is set by nccltune"},
		{`["--overlap", "--nodes", "2"]`, "--nodes 2 is set by nccltune"},
		{`["-l", "-o", "out.txt"]`, "-o out.txt sends the ranks' output elsewhere"},
		{`["--task-prolog", "/bin/p.sh"]`, "--task-prolog /bin/p.sh has slurmstepd run a program"},
		{`["--exclusive", "-N2"]`, "-N2 is set by nccltune"},
	} {
		src := strings.TrimSuffix(numNCCLTests, "\n") + "\n" + srun + "args = " + tc.args + "\n"
		_, err := parseWithin(t, src)
		if tc.error == "" && err != nil || tc.error != "" && (err == nil || !strings.Contains(err.Error(), tc.error)) {
			t.Errorf("launcher.args %s: %v, want %q", tc.args, err, tc.error)
		}
	}
}

// TestSrunArgsAliases: srun 22.05's getopt_long takes long names srun(1)
// does not list, as the real srun answers them: --tasks-per-node (and its
// abbreviation --tasks) is --ntasks-per-node, --cpu_bind is --cpu-bind,
// --cluster is --clusters, --pack-group is --het-group, and --context and
// --ntasks-per-tres take a value too; each is read as srun reads it, so
// that what follows it is checked as srun reads it.
func TestSrunArgsAliases(t *testing.T) {
	const srun = "[launcher]\nkind = \"srun\"\nnodes = 1\nntasks_per_node = 8\n"
	for _, tc := range []struct {
		args  string
		error string
	}{
		{`["--tasks-per-node=4"]`, "--tasks-per-node=4 is set by nccltune"},
		{`["--tasks", "4"]`, "--tasks 4 is set by nccltune"},
		{`["--cpu_bind", "cores", "-N2"]`, "-N2 is set by nccltune"},
		{`["--cpu_b=cores", "--mpi", "pmi2", "-N2"]`, "-N2 is set by nccltune"},
		{`["--cluster", "c1", "-o", "out.txt"]`, "-o out.txt sends the ranks' output elsewhere"},
		{`["--pack-group", "0", "-N2"]`, "-N2 is set by nccltune"},
		{`["--context", "unconfined_u", "-N2"]`, "-N2 is set by nccltune"},
		{`["--ntasks-per-tres", "2", "-N2"]`, "-N2 is set by nccltune"},
		{`["--whole", "-N2"]`, "-N2 is set by nccltune"},
		{`["--cluster", "-N2"]`, ""},
	} {
		src := strings.TrimSuffix(numNCCLTests, "\n") + "\n" + srun + "args = " + tc.args + "\n"
		_, err := parseWithin(t, src)
		if tc.error == "" && err != nil || tc.error != "" && (err == nil || !strings.Contains(err.Error(), tc.error)) {
			t.Errorf("launcher.args %s: %v, want %q", tc.args, err, tc.error)
		}
	}
}

// TestSrunArgsProgram: srun takes its first argument that is no option,
// nor an option's value, for the program it runs (and all after "--"),
// with nccltune's benchmark command as that program's arguments, so that
// every trial would run it; an optional value given apart ("-K 1",
// "--exclusive user") is such an argument, as getopt_long reads it.
func TestSrunArgsProgram(t *testing.T) {
	const srun = "[launcher]\nkind = \"srun\"\nnodes = 1\nntasks_per_node = 8\n"
	for _, tc := range []struct {
		args  string
		error string
	}{
		{`["-K", "1"]`, `launcher.args: "1" is no option of srun's`},
		{`["--exclusive", "user", "--mpi=pmix"]`, `launcher.args: "user" is no option of srun's`},
		{`["--mpi", "pmix", "hostname"]`, `launcher.args: "hostname" is no option of srun's`},
		{`["--", "-l"]`, `launcher.args: "--" ends srun's options`},
		{`["--exclusive=user", "-K1", "--mpi", "pmix", "-J", "x"]`, ""},
	} {
		src := strings.TrimSuffix(numNCCLTests, "\n") + "\n" + srun + "args = " + tc.args + "\n"
		_, err := parseWithin(t, src)
		if tc.error == "" && err != nil || tc.error != "" && (err == nil || !strings.Contains(err.Error(), tc.error)) {
			t.Errorf("launcher.args %s: %v, want %q", tc.args, err, tc.error)
		}
	}
}
