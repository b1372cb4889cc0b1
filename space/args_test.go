package space

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestArgsGiveNoOptionOfNccltune: launcher.args and benchmark.args may not
// give an option nccltune passes itself from the space, in any spelling the
// program reads (getopt's "-n16" and "--ntasks=16", argparse's "--nproc"):
// the program takes the last one given, and a trial ran other ranks, nodes
// or iterations than the space says, or without its variables (srun
// --export=NONE).
func TestArgsGiveNoOptionOfNccltune(t *testing.T) {
	const srun = "[launcher]\nkind = \"srun\"\nnodes = 1\nntasks_per_node = 8\n"
	const mpirun = "[launcher]\nkind = \"mpirun\"\nnp = 8\nhostfile = \"hosts\"\n"
	const torchrun = "[launcher]\nkind = \"torchrun\"\nnproc_per_node = 8\n"
	for _, tc := range []struct {
		base, launcher, args string
		want                 string // "": accepted
	}{
		{numNCCLTests, srun, `["-n", "16"]`, "launcher.args: -n 16 is set by nccltune from the space (launcher.ntasks_per_node)"},
		{numNCCLTests, srun, `["-n16"]`, "-n16 is set by nccltune"},
		{numNCCLTests, srun, `["--ntasks=16"]`, "--ntasks=16 is set by nccltune"},
		{numNCCLTests, srun, `["--ntasks-per-node", "4"]`, "(launcher.ntasks_per_node)"},
		{numNCCLTests, srun, `["--ntasks-per"]`, "(launcher.ntasks_per_node)"},
		{numNCCLTests, srun, `["-N2"]`, "(launcher.nodes (or campaign.scales))"},
		{numNCCLTests, srun, `["--nodes", "2"]`, "(launcher.nodes (or campaign.scales))"},
		{numNCCLTests, srun, `["--export=NONE"]`, "--export=NONE is set by nccltune from the space (--export=ALL"},
		{numNCCLTests, srun, `["-K0"]`, "(--kill-on-bad-exit=1"},
		{numNCCLTests, srun, `["--kill-on-bad-exit=0"]`, "(--kill-on-bad-exit=1"},
		{numNCCLTests, srun, `["--mpi=pmix", "--gpus-per-task=1", "--distribution=cyclic", "--exclusive", "-l", "-w", "n1"]`, ""},
		{numNCCLTests, srun + "groups = 2\n", `["-w", "n1"]`, "(launcher.groups, which gives each trial its group's nodes)"},
		{numNCCLTests, srun + "groups = 2\n", `["--nodelist=n1"]`, "(launcher.groups"},
		// srun's --nodefile replaces the group's --nodelist wherever it stands.
		{numNCCLTests, srun + "groups = 2\n", `["-F", "nodes.txt"]`, "-F nodes.txt is set by nccltune from the space (launcher.groups"},
		{numNCCLTests, srun + "groups = 2\n", `["--nodefile=nodes.txt"]`, "(launcher.groups"},
		{numNCCLTests, srun + "groups = 2\n", `["-lFnodes.txt"]`, "(launcher.groups"},
		{numNCCLTests, srun, `["-F", "nodes.txt"]`, ""},
		// A task prolog's "export NAME=value" lines set each task's variables past srun's.
		{numNCCLTests, srun, `["--task-prolog=/home/u/p.sh"]`, "launcher.args: --task-prolog=/home/u/p.sh has slurmstepd run a program before each task"},
		{numNCCLTests, srun, `["--task-pro", "p.sh"]`, "--task-pro p.sh has slurmstepd run a program"},
		{numNCCLTests, srun, `["--task-epilog=e.sh", "--prolog=p.sh"]`, ""},
		{numNCCLTests, mpirun, `["-np", "4"]`, "launcher.args: -np is set by nccltune from the space (launcher.np)"},
		{numNCCLTests, mpirun, `["-c", "4"]`, "(launcher.np)"},
		{numNCCLTests, mpirun, `["--hostfile=other"]`, "(launcher.hostfile)"},
		{numNCCLTests, mpirun, `["--mca", "btl", "^openib", "-nolocal", "-cpus-per-proc", "2", "--host", "a:8", "--oversubscribe"]`, ""},
		{numNCCLTests, mpirun + "groups = 2\n", `["--host", "a:8"]`, "(launcher.groups, which gives each trial its group's hosts)"},
		// An NCCL variable handed to the ranks would override the trial's.
		{numNCCLTests, mpirun, `["-x", "NCCL_ALGO=Ring"]`, "launcher.args: -x NCCL_ALGO=Ring hands the ranks NCCL_ALGO, which the space sets"},
		{numNCCLTests, mpirun, `["-x", "NCCL_IB_HCA"]`, "hands the ranks NCCL_IB_HCA"},
		{numNCCLTests, mpirun, `["-genv", "NCCL_PROTO", "LL"]`, "-genv NCCL_PROTO hands the ranks NCCL_PROTO"},
		{numNCCLTests, mpirun, `["-genvlist", "PATH,NCCL_ALGO"]`, "hands the ranks NCCL_ALGO"},
		{numNCCLTests, mpirun, `["-x", "LD_LIBRARY_PATH", "-x", "UCX_TLS=rc"]`, ""},
		// Hydra reads an option after any dashes, in any case, with its value after '='.
		{numNCCLTests, mpirun, `["--genv", "NCCL_PROTO", "LL"]`, "--genv NCCL_PROTO hands the ranks NCCL_PROTO"},
		{numNCCLTests, mpirun, `["-GENV", "NCCL_PROTO", "LL"]`, "hands the ranks NCCL_PROTO"},
		{numNCCLTests, mpirun, `["-genv=NCCL_PROTO", "LL"]`, "hands the ranks NCCL_PROTO"},
		{numNCCLTests, mpirun, `["--envlist=PATH,NCCL_ALGO"]`, "hands the ranks NCCL_ALGO"},
		{numNCCLTests, mpirun, `["--x", "NCCL_ALGO=Ring"]`, "hands the ranks NCCL_ALGO"},
		{numNCCLTests, mpirun, `["--mca", "mca_base_env_list", "FOO=1;NCCL_ALGO=Ring"]`, "mca_base_env_list FOO=1;NCCL_ALGO=Ring: Open MPI refuses to run with it"},
		{numNCCLTests, mpirun, `["-mca", "mca_base_env_list", "NCCL_IB_HCA"]`, "mca_base_env_list NCCL_IB_HCA: Open MPI refuses to run with it"},
		// Open MPI refuses to run with any list beside nccltune's -x.
		{numNCCLTests, mpirun, `["--mca", "mca_base_env_list", "FOO=1;UCX_TLS=rc", "--mca", "pml", "ucx"]`, "--mca mca_base_env_list FOO=1;UCX_TLS=rc: Open MPI refuses to run with it beside the -x options"},
		{numNCCLTests, mpirun, `["--mca", "mca_base_env_list_delimiter", ":", "--mca", "pml", "ucx", "-genv", "I_MPI_DEBUG", "5", "-genvall"]`, ""},
		// Options that have mpirun read options, or the ranks' variables, from a file.
		{numNCCLTests, mpirun, `["--tune", "t.conf"]`, "launcher.args: --tune t.conf has mpirun read MCA parameters and -x variables from a file"},
		{numNCCLTests, mpirun, `["-tune", "t.conf"]`, "-tune t.conf has mpirun read"},
		{numNCCLTests, mpirun, `["--tune"]`, "launcher.args: --tune has mpirun read"}, // no file given: no blank for it
		{numNCCLTests, mpirun, `["--am", "ft-mpi"]`, "--am ft-mpi has mpirun read aggregate MCA parameter sets"},
		{numNCCLTests, mpirun, `["--app", "appfile"]`, "--app appfile has mpirun read programs"},
		{numNCCLTests, mpirun, `["--app=appfile"]`, "has mpirun read programs"},
		{numNCCLTests, mpirun, `["-configfile", "cfg"]`, "-configfile cfg has mpirun read options (-genv, -env)"},
		{numNCCLTests, mpirun, `["--mca", "mca_base_param_files", "/tmp/p.conf"]`, "--mca mca_base_param_files /tmp/p.conf has mpirun read MCA parameters or variables from files"},
		{numNCCLTests, mpirun, `["-mca", "mca_base_envar_file_prefix", "envs"]`, "mca_base_envar_file_prefix envs has mpirun read"},
		{numNCCLTests, mpirun, `["--mca", "mca_base_param_file_prefix", "ft-mpi"]`, "has mpirun read"},
		{numNCCLTests, mpirun, `["--gmca", "mca_base_override_param_file", "o.conf"]`, "has mpirun read"},
		// mca_base_param_files' deprecated synonym, which Open MPI still reads.
		{numNCCLTests, mpirun, `["--mca", "mca_param_files", "/tmp/p.conf"]`, "--mca mca_param_files /tmp/p.conf has mpirun read MCA parameters or variables from files"},
		{numNCCLTests, mpirun, `["--mca", "btl_tcp_if_include", "eth0", "--mca", "orte_tmpdir_base", "/tmp", "--tag-output", "--timestamp-output"]`, ""},
		// A component's file of other things than MCA parameters: the HCAs' settings.
		{numNCCLTests, mpirun, `["--mca", "btl_openib_device_param_files", "/etc/ompi/mca-btl-openib-device-params.ini"]`, ""},
		// Open MPI 5's mpirun reads its options with getopt_long: a long option's
		// abbreviation, a short option's value attached, every option ending in "mca".
		{numNCCLTests, mpirun, `["--mc", "mca_base_env_list", "NCCL_ALGO=Ring"]`, "mca_base_env_list NCCL_ALGO=Ring: Open MPI refuses to run with it"},
		{numNCCLTests, mpirun, `["--gm", "mca_base_env_list", "NCCL_ALGO=Ring"]`, "mca_base_env_list NCCL_ALGO=Ring: Open MPI refuses to run with it"},
		{numNCCLTests, mpirun, `["--prtemca", "mca_base_env_list", "NCCL_ALGO=Ring"]`, "mca_base_env_list NCCL_ALGO=Ring: Open MPI refuses to run with it"},
		{numNCCLTests, mpirun, `["--pmixmca", "mca_base_param_files", "p.conf"]`, "has mpirun read MCA parameters or variables from files"},
		{numNCCLTests, mpirun, `["--tun", "t.conf"]`, "--tun t.conf has mpirun read MCA parameters and -x variables"},
		{numNCCLTests, mpirun, `["--ap", "appfile"]`, "has mpirun read programs"},
		{numNCCLTests, mpirun, `["-xNCCL_ALGO=Ring"]`, "-xNCCL_ALGO=Ring NCCL_ALGO=Ring hands the ranks NCCL_ALGO"},
		{numNCCLTests, mpirun, `["-vx", "NCCL_PROTO=LL"]`, "hands the ranks NCCL_PROTO"},
		{numNCCLTests, mpirun, `["--n", "4"]`, "(launcher.np)"},
		{numNCCLTests, mpirun, `["-n16"]`, "-n16 is set by nccltune from the space (launcher.np)"},
		{numNCCLTests, mpirun, `["-c4"]`, "(launcher.np)"},
		{numNCCLTests, mpirun, `["--hostf", "other"]`, "(launcher.hostfile)"},
		{numNCCLTests, mpirun, `["--machine=other"]`, "(launcher.hostfile)"},
		{numNCCLTests, mpirun + "groups = 2\n", `["--ho", "a:8"]`, "(launcher.groups"},
		{numNCCLTests, mpirun + "groups = 2\n", `["-Ha:8"]`, "(launcher.groups"},
		{numNCCLTests, mpirun, `["-xUCX_TLS=rc", "--mc", "btl", "^openib", "-max-vm-size", "2", "--prefix", "/opt/ompi", "-nolocal", "--tag-output", "--output", "tag,timestamp"]`, ""},
		// Output as XML (Open MPI 4's --xml, 5's --output xml): the table's
		// lines, NCCL's log and its values held "&#010;</stdout>", and every
		// trial failed, as NCCL's (a WARN line) or unparsable.
		{numNCCLTests, mpirun, `["--xml"]`, "launcher.args: --xml writes the ranks' output as XML"},
		{numNCCLTests, mpirun, `["-xml"]`, "launcher.args: -xml writes the ranks' output as XML"},
		{numNCCLTests, mpirun, `["--output", "tag,xml"]`, "launcher.args: --output tag,xml writes the ranks' output as XML"},
		{numNCCLTests, mpirun, `["--output=xml"]`, "launcher.args: --output=xml writes the ranks' output as XML"},
		// Open MPI 4's --xml-file writes all of it, mpirun's reports too, as
		// XML to a file, and nothing where nccltune reads it.
		{numNCCLTests, mpirun, `["--xml-file", "/tmp/o.xml"]`, "launcher.args: --xml-file /tmp/o.xml writes the ranks' output as XML"},
		{numNCCLTests, mpirun, `["-xml-file", "o.xml"]`, "launcher.args: -xml-file o.xml writes the ranks' output as XML"},
		// The MCA parameters those options set (Open MPI 4's orte_xml_output,
		// orte_xml_file), in any spelling of --mca, and its value as Open
		// MPI reads a bool; a false one changes nothing.
		{numNCCLTests, mpirun, `["--mca", "orte_xml_output", "1"]`, "launcher.args: --mca orte_xml_output 1 writes the ranks' output as XML"},
		{numNCCLTests, mpirun, `["-mca", "orte_xml_output", "true"]`, "-mca orte_xml_output true writes the ranks' output as XML"},
		{numNCCLTests, mpirun, `["--gmca", "orte_xml_output", "Enabled"]`, "--gmca orte_xml_output Enabled writes"},
		{numNCCLTests, mpirun, `["--mc", "orte_xml_file", "o.xml"]`, "--mc orte_xml_file o.xml writes"},
		{numNCCLTests, mpirun, `["--mca", "orte_xml_output", "0", "--mca", "orte_xml_output", "false"]`, ""},
		// Open MPI 5's (PRRTE's) MCA parameter of --output, and a directive
		// as PRRTE reads one, in any case, abbreviated, with its qualifiers.
		{numNCCLTests, mpirun, `["--prtemca", "output", "xml"]`, "--prtemca output xml writes"},
		{numNCCLTests, mpirun, `["--mca", "output", "tag,XML:raw"]`, "--mca output tag,XML:raw writes"},
		{numNCCLTests, mpirun, `["--output", "x"]`, "--output x writes"},
		{numNCCLTests, mpirun, `["--prtemca", "output", "tag,timestamp"]`, ""},
		// Open MPI 5's output to files with the nocopy qualifier sends none
		// of it where nccltune reads it (PRRTE's PMIX_IOF_FILE_ONLY).
		{numNCCLTests, mpirun, `["--output", "file=/tmp/o:nocopy"]`, "launcher.args: --output file=/tmp/o:nocopy sends the ranks' output to files only"},
		{numNCCLTests, mpirun, `["--output=dir=/tmp/o,:NOC"]`, "--output=dir=/tmp/o,:NOC sends the ranks' output to files only"},
		{numNCCLTests, mpirun, `["--prtemca", "output", "f=o:n"]`, "--prtemca output f=o:n sends the ranks' output to files only"},
		{numNCCLTests, mpirun, `["--output", "tag:raw"]`, ""},
		// Open MPI 4's --output-filename copies the output, but not with
		// its nocopy qualifier (4.1.4: any case, in the list after the
		// first ':').
		{numNCCLTests, mpirun, `["--output-filename", "/tmp/o:nocopy"]`, "launcher.args: --output-filename /tmp/o:nocopy sends the ranks' output to files only"},
		{numNCCLTests, mpirun, `["-output-filename", "/tmp/o:x,NOCOPY"]`, "-output-filename /tmp/o:x,NOCOPY sends the ranks' output to files only"},
		{numNCCLTests, mpirun, `["--output-filename", "/tmp/o"]`, ""},
		{numNCCLTests, mpirun, `["--output-filename", "/tmp/o:a:nocopy"]`, ""},
		{numNCCLTests, mpirun, `["--output", "tag", "--output-filename", "/tmp/o"]`, ""},
		{numDDP, torchrun, `["--nproc_per_node=4"]`, "launcher.args: --nproc_per_node=4 is set by nccltune from the space (launcher.nproc_per_node)"},
		{numDDP, torchrun, `["--nproc", "4"]`, "(launcher.nproc_per_node)"},
		{numDDP, torchrun, `["--nnodes", "2"]`, "(launcher.nodes)"},
		{numDDP, torchrun, `["--standalone"]`, "(launcher.rdzv_endpoint)"},
		{numDDP, torchrun, `["--rdzv-endpoint=h:29400"]`, "(launcher.rdzv_endpoint)"},
		{numDDP, torchrun, `["--max_restarts", "0", "--rdzv_id", "x", "--no_python", "--log_dir", "/tmp/l"]`, ""},
		// With a rendezvous of several nodes' torchrun, each launch meets
		// under an id of its own, which a later --rdzv_id would replace
		// (--standalone replaces it itself, above).
		{numDDP, torchrun + "nodes = 2\nrdzv_endpoint = \"n1:29400\"\ncommand = \"/opt/torchrun-on-all.sh\"\n", `["--rdzv_id", "job7"]`, "--rdzv_id is set by nccltune from the space (launcher.rdzv_endpoint"},
		{numDDP, torchrun + "nodes = 2\nrdzv_endpoint = \"n1:29400\"\ncommand = \"/opt/torchrun-on-all.sh\"\n", `["--rdzv-id=job7"]`, "--rdzv-id=job7 is set by nccltune"},
		// Options that send the ranks' output elsewhere than nccltune reads it.
		{numNCCLTests, srun, `["-o", "/dev/null"]`, "launcher.args: -o /dev/null sends the ranks' output"},
		{numNCCLTests, srun, `["--output=out.%t"]`, "--output=out.%t sends the ranks' output"},
		{numNCCLTests, srun, `["-lo", "out"]`, "-lo out sends the ranks' output"},
		{numNCCLTests, srun, `["--error", "err.%t"]`, "--error err.%t sends the ranks' output"},
		{numNCCLTests, srun, `["-l", "--unbuffered", "-Q"]`, ""},
		{numDDP, torchrun, `["--redirects", "3"]`, "--redirects sends the ranks' output"},
		{numDDP, torchrun, `["-r", "3"]`, "-r sends the ranks' output"},
		{numDDP, torchrun, `["--local-ranks-filter=0"]`, "--local-ranks-filter=0 sends the ranks' output"},
		{numDDP, torchrun, `["--tee", "3"]`, ""},
	} {
		src := strings.TrimSuffix(tc.base, "\n") + "\n" + tc.launcher + "args = " + tc.args + "\n"
		_, err := parseWithin(t, src)
		line := fmt.Sprintf("h.toml:%d: ", strings.Count(src, "\n")) // args, the last line
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s refused: %v", tc.args, err)
		case tc.want == "":
		case err == nil:
			t.Errorf("%s accepted\n%s", tc.args, src)
		case !strings.Contains(err.Error(), line) || !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: %v\nwant %s... %s", tc.args, err, line, tc.want)
		}
	}
	// nccl-tests reads its options with getopt too.
	for _, args := range []string{`["-n5"]`, `["--iter", "5"]`, `["-c0"]`} {
		src := strings.Replace(numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\nargs = "+args, 1)
		if _, err := parseWithin(t, src); err == nil || !strings.Contains(err.Error(), "h.toml:5: benchmark.args:") {
			t.Errorf("benchmark.args %s: %v", args, err)
		}
	}
}

// TestSrunWithout: an option is taken out however srun reads it, and
// nothing else is: a value that looks like it stays.
func TestSrunWithout(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"-u", ""},
		{"--unbuffered -l", "-l"},
		{"--unbuf", ""},
		{"-lu", "-l"},
		{"-ulQ", "-lQ"},
		{"-uJu", "-Ju"},
		{"-J -u", "-J -u"},
		{"--job-name -u -u", "--job-name -u"},
		{"-l -u --mpi=pmi2 -u", "-l --mpi=pmi2"},
		{"-l -- -u", "-l -- -u"},
	} {
		if got := strings.Join(SrunWithout(strings.Fields(tc.args), "unbuffered"), " "); got != tc.want {
			t.Errorf("%q less -u: %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := SrunWithout([]string{"-lJjob", "-N", "2"}, "job-name"); !slices.Equal(got, []string{"-l", "-N", "2"}) {
		t.Errorf("-lJjob -N 2 less -J: %q", got)
	}
	if got := SrunWithout([]string{"-J", "job", "-l"}, "job-name"); !slices.Equal(got, []string{"-l"}) {
		t.Errorf("-J job -l less -J: %q", got)
	}
}
