package space

import (
	"fmt"
	"strconv"
	"strings"
)

// ncclTestsOptions are nccl-tests' options, as the getopt_long table of its
// src/common.cu names them (2.19): a letter and a long name. Each takes a
// value but --help.
var ncclTestsOptions = []struct {
	short byte
	long  string
}{
	{'t', "nthreads"}, {'g', "ngpus"}, {'b', "minbytes"}, {'e', "maxbytes"}, {'i', "stepbytes"},
	{'f', "stepfactor"}, {'n', "iters"}, {'m', "agg_iters"}, {'w', "warmup_iters"}, {'N', "run_cycles"},
	{'p', "parallel_init"}, {'c', "check"}, {'o', "op"}, {'d', "datatype"}, {'r', "root"},
	{'z', "blocking"}, {'y', "stream_null"}, {'T', "timeout"}, {'G', "cudagraph"}, {'C', "report_cputime"},
	{'S', "report_timestamps"}, {'J', "output_file"}, {'a', "average"}, {'R', "local_register"},
	{'x', "cta_policy"}, {'D', "device_implementation"}, {'V', "device_cta_count"}, {'M', "memory"},
	{'u', "unalign"}, {'I', "per_iter_timing"}, {'K', "per_iter_skip"}, {'h', "help"},
}

// ElementBytes are the bytes of an element of each of nccl-tests' data
// types (-d), by the names it knows (not C's char or int, which it runs as
// float, as any name it does not know).
var ElementBytes = map[string]int64{
	"int8": 1, "uint8": 1, "f8e4m3": 1, "f8e5m2": 1,
	"half": 2, "bfloat16": 2,
	"int32": 4, "uint32": 4, "float": 4,
	"int64": 8, "uint64": 8, "double": 8,
}

// NCCLTestsOption is one option of an nccl-tests command line.
type NCCLTestsOption struct {
	Written string // as written: "-S", "--report_t"
	Long    string // nccl-tests' long name: "report_timestamps"
	Value   string
}

// NCCLTestsOptions reads nccl-tests' extra arguments as its getopt_long
// does: a letter's value attached ("-S1") or the next argument; a long name
// by any unambiguous prefix ("--nt" is --nthreads), its value after '=' or
// the next argument. What is no option (getopt_long moves it past the
// options, and nccl-tests ignores it) is passed over, and so is an option
// it does not know, which a later nccl-tests may. An ambiguous prefix or a
// missing value is an error: nccl-tests would print its usage and run
// nothing.
func NCCLTestsOptions(args []string) ([]NCCLTestsOption, error) {
	var opts []NCCLTestsOption
	for i := 0; i < len(args); i++ {
		a := args[i]
		var o NCCLTestsOption
		var hasValue bool
		switch {
		case a == "--":
			return opts, nil
		case strings.HasPrefix(a, "--"):
			name, value, eq := strings.Cut(a[2:], "=")
			long, err := longOption(name)
			if err != nil {
				return nil, err
			}
			o = NCCLTestsOption{Written: "--" + name, Long: long, Value: value}
			hasValue = eq
		case len(a) > 1 && a[0] == '-':
			// Letters: "-hS1" is -h, then -S with the value 1. After a
			// letter nccl-tests does not know, what follows is unknown too.
			for j := 1; j < len(a); j++ {
				long := shortOption(a[j])
				if long == "help" {
					opts = append(opts, NCCLTestsOption{Written: "-h", Long: long})
					continue
				}
				if long != "" {
					o = NCCLTestsOption{Written: "-" + a[j:j+1], Long: long, Value: a[j+1:]}
					hasValue = j+1 < len(a)
				}
				break
			}
		}
		if o.Long == "" {
			continue
		}
		if o.Long != "help" && !hasValue {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%s has no value", o.Written)
			}
			i++
			o.Value = args[i]
		}
		opts = append(opts, o)
	}
	return opts, nil
}

// longOption is the option a long name or a prefix of one names: "" where
// none does.
func longOption(name string) (string, error) {
	var found []string
	for _, o := range ncclTestsOptions {
		if o.long == name {
			return name, nil
		}
		if name != "" && strings.HasPrefix(o.long, name) {
			found = append(found, "--"+o.long)
		}
	}
	if len(found) > 1 {
		return "", fmt.Errorf("--%s is ambiguous to nccl-tests (%s)", name, strings.Join(found, ", "))
	}
	if len(found) == 1 {
		return found[0][2:], nil
	}
	return "", nil
}

func shortOption(c byte) string {
	for _, o := range ncclTestsOptions {
		if o.short == c {
			return o.long
		}
	}
	return ""
}

// Int reads the option's value as nccl-tests does, with strtol(v, NULL, 0),
// where it reads all of it: decimal, octal after a leading 0, hexadecimal
// after 0x.
func (o NCCLTestsOption) Int() (int, bool) {
	digits := strings.TrimLeft(o.Value, "+-")
	if strings.ContainsRune(o.Value, '_') || len(digits) > 1 && digits[0] == '0' && strings.ContainsAny(digits[1:2], "bBoO") {
		return 0, false // Go's base 0 reads these; strtol does not
	}
	n, err := strconv.ParseInt(o.Value, 0, 32)
	return int(n), err == nil
}
