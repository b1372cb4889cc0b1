package space

import (
	"cmp"
	"slices"
	"strings"
)

// SrunOption is one option of srun's command line as srun's getopt_long
// reads it: Written as given ("-n16", "--exp ALL"), Long its whole long
// name ("ntasks", "export"), Value its value, attached or the next
// argument.
type SrunOption struct {
	Written, Long, Value string
	HasValue             bool
	// Where it is written: args[arg], from its letter in a cluster of
	// short options (0: the whole argument), and the next argument where
	// that is its value.
	arg, letter int
	next        bool
}

// Read is the option in one spelling, "--name" or "--name=value", by which
// the checks compare it.
func (o SrunOption) Read() string {
	if o.HasValue {
		return "--" + o.Long + "=" + o.Value
	}
	return "--" + o.Long
}

// How an option of srun takes its value (slurm_opt.c): none; only attached
// ("-K1", "--kill-on-bad-exit=1"); attached or as the next argument.
const (
	srunNoValue = iota
	srunOptionalValue
	srunValue
)

// srunLong are srun's long options by how they take a value: those of
// 22.05's getopt_long table (srun(1)'s and the aliases it does not list,
// srunAlias), with 23.11's --external-launcher and --tres-per-task. One
// srun does not know is read as taking none, so that the argument after it
// is still checked as an option.
var srunLong = func() map[string]int {
	m := map[string]int{}
	for kind, names := range []string{
		srunNoValue: "contiguous debugger-test disable-status exact external-launcher help hold interactive label multi-prog " +
			"no-allocate overcommit oversubscribe preserve-env pty quiet quit-on-interrupt reboot spread-job test-only " +
			"unbuffered usage use-min-nodes verbose version whole",
		srunOptionalValue: "bcast compress exclusive immediate kill-on-bad-exit nice no-kill overlap propagate resv-ports send-libs x11",
		srunValue: "accel-bind account acctg-freq bb bbf bcast-exclude begin chdir cluster cluster-constraint clusters comment " +
			"constraint container context core-spec cores-per-socket cpu-bind cpu_bind cpu-freq cpus-per-gpu cpus-per-task " +
			"deadline delay-boot dependency distribution epilog error exclude export extra-node-info gid gpu-bind gpu-freq " +
			"gpus gpus-per-node gpus-per-socket gpus-per-task gres gres-flags het-group hint input job-name jobid licenses " +
			"mail-type mail-user mcs-label mem mem-bind mem-per-cpu mem-per-gpu mincpus mpi msg-timeout network nodefile " +
			"nodelist nodes ntasks ntasks-per-core ntasks-per-gpu ntasks-per-node ntasks-per-socket ntasks-per-tres " +
			"open-mode output pack-group partition power prefer priority profile prolog qos relative reservation signal " +
			"slurmd-debug sockets-per-node switches task-epilog task-prolog tasks-per-node thread-spec threads " +
			"threads-per-core time time-min tmp tres-per-task uid wait wckey",
	} {
		for _, name := range strings.Fields(names) {
			m[name] = kind
		}
	}
	return m
}()

// srunAlias are the long names srun takes for another option (slurm_opt.c
// gives both the same option), by the option's name in srun(1).
var srunAlias = map[string]string{
	"tasks-per-node": "ntasks-per-node", "cpu_bind": "cpu-bind", "cluster": "clusters", "pack-group": "het-group",
}

// srunCanonical is name, a whole long name, as srun(1) names its option.
func srunCanonical(name string) string { return cmp.Or(srunAlias[name], name) }

// srunShort are srun's short options, by their long names.
var srunShort = map[byte]string{
	'A': "account", 'B': "extra-node-info", 'C': "constraint", 'D': "chdir", 'E': "preserve-env", 'F': "nodefile",
	'G': "gpus", 'H': "hold", 'I': "immediate", 'J': "job-name", 'K': "kill-on-bad-exit", 'L': "licenses",
	'M': "clusters", 'N': "nodes", 'O': "overcommit", 'Q': "quiet", 'S': "core-spec", 'T': "threads", 'V': "version",
	'W': "wait", 'X': "disable-status", 'Z': "no-allocate", 'b': "begin", 'c': "cpus-per-task", 'd': "dependency",
	'e': "error", 'h': "help", 'i': "input", 'k': "no-kill", 'l': "label", 'm': "distribution", 'n': "ntasks",
	'o': "output", 'p': "partition", 'q': "qos", 'r': "relative", 's': "oversubscribe", 't': "time", 'u': "unbuffered",
	'v': "verbose", 'w': "nodelist", 'x': "exclude",
}

// srunLongName is the long option that name, whole or an abbreviation
// getopt_long takes, names, as srun(1) names it (srunCanonical); name
// itself where none or several options do (srun refuses it:
// "unrecognized option", "is ambiguous"). An abbreviation of an option and
// its alias only is no ambiguity, as getopt_long reads them.
func srunLongName(name string) string {
	if _, ok := srunLong[name]; ok || name == "" {
		return srunCanonical(name)
	}
	found := ""
	for long := range srunLong {
		if !strings.HasPrefix(long, name) {
			continue
		}
		if found != "" && found != srunCanonical(long) {
			return name
		}
		found = srunCanonical(long)
	}
	return cmp.Or(found, name)
}

// SrunOptions are the options of args, srun's arguments, as srun's
// getopt_long reads them (srunParse).
func SrunOptions(args []string) []SrunOption {
	opts, _ := srunParse(args)
	return opts
}

// SrunWithout is args, srun's arguments, less the options named long
// (their whole long name), however written: alone, abbreviated, or in a
// cluster of short options ("-lu" less unbuffered is "-l").
func SrunWithout(args []string, long string) []string {
	opts, rest := srunParse(args)
	out := slices.Clone(args[:len(args)-len(rest)])
	// From the last, so that those before stay where they were read.
	for _, o := range slices.Backward(opts) {
		if o.Long != long {
			continue
		}
		// Its letter, and the rest of a cluster where that is its value;
		// the next argument where that is.
		a := out[o.arg][:o.letter]
		if o.letter > 0 && !o.HasValue {
			a += out[o.arg][o.letter+1:]
		}
		if o.next {
			out = slices.Delete(out, o.arg+1, o.arg+2)
		}
		if out[o.arg] = a; a == "" || a == "-" {
			out = slices.Delete(out, o.arg, o.arg+1)
		}
	}
	return append(out, rest...)
}

// srunParse reads args, srun's arguments, as srun's getopt_long does: a
// long option's value after '=' or, where it must have one, as the next
// argument, whatever that looks like ("-J -n16" names the job "-n16");
// short options in a cluster after flags ("-ln16" is -l, then -n 16), the
// first that takes a value taking the rest; an optional value only
// attached. srun stops at "--" and at its first argument that is no
// option, the program it runs: rest is the arguments from there.
func srunParse(args []string) (opts []SrunOption, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			return opts, args[i:]
		}
		var o SrunOption
		if strings.HasPrefix(a, "--") {
			name, value, eq := strings.Cut(a[2:], "=")
			o = SrunOption{Written: a, Long: srunLongName(name), Value: value, HasValue: eq, arg: i}
		} else {
			for j := 1; j < len(a); j++ {
				long := srunShort[a[j]]
				o = SrunOption{Written: a, Long: cmp.Or(long, a[j:j+1]), Value: a[j+1:], HasValue: j+1 < len(a), arg: i, letter: j}
				if srunLong[long] != srunNoValue {
					break
				}
				o.Value, o.HasValue = "", false
				if j+1 < len(a) {
					opts = append(opts, o)
				}
			}
		}
		if !o.HasValue && srunLong[o.Long] == srunValue && i+1 < len(args) {
			i++
			o.Written, o.Value, o.HasValue, o.next = a+" "+args[i], args[i], true, true
		}
		opts = append(opts, o)
	}
	return opts, nil
}
