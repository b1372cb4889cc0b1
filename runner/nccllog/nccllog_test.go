package nccllog

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

const sample = `node1:123:123 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node1:123:123 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.
node1:123:123 [0] NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.
NCCL version 2.28.3+cuda13.0
node1:123:140 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
node1:123:123 [0] NCCL INFO Using network IB
node1:123:123 [0] NCCL INFO comm 0x55996cf6fcb0 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0
node1:123:145 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA
node1:123:123 [0] NCCL INFO Channel 00/24 :    0   1   2   3   4   5   6   7
[1,3]<stdout>:node2:77:77 [3] NCCL INFO NCCL_ALGO set by environment to Ring.
`

func TestParse(t *testing.T) {
	l := Parse([]byte(sample))
	if l.Version != "2.28.3+cuda13.0" || l.Network != "IB" || !l.RoCE || !l.GDR || !l.Debug || l.Channels != 24 || l.Nodes != 2 {
		t.Errorf("log = %+v", l)
	}
	if l.Read["NCCL_NVLS_ENABLE"] != "0" || l.Read["NCCL_IB_GID_INDEX"] != "3" || l.Read["NCCL_ALGO"] != "Ring" {
		t.Errorf("read = %v", l.Read)
	}
	unread := l.Unread([]string{"NCCL_NVLS_ENABLE=0", "NCCL_IB_GID_INDX=3", "NCCL_ALGO=ring", "NCCL_IB_GID_INDEX=4", "PATH=/bin"})
	if want := []string{"NCCL_IB_GID_INDX", "NCCL_IB_GID_INDEX"}; !slices.Equal(unread, want) {
		t.Errorf("unread = %v, want %v", unread, want)
	}
	socket := Parse([]byte("h:1:1 [0] NCCL INFO NET/IB : No device found.\nh:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\nh:1:1 [0] NCCL INFO Using network Socket\n"))
	if socket.Network != "Socket" || socket.GDR || socket.RoCE || len(socket.Notes) != 2 {
		t.Errorf("socket log = %+v", socket)
	}
	if ib := Parse([]byte("h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ib0:10.0.0.1<0>\n")); ib.RoCE {
		t.Errorf("InfiniBand ports read as RoCE: %+v", ib)
	}
	// A line over the scanner's 4 MiB hides none of the lines after it.
	if long := Parse([]byte(strings.Repeat("x", 5<<20) + "\n" + sample)); long.Read["NCCL_ALGO"] != "Ring" || long.Channels != 24 {
		t.Errorf("after an over-long line: %+v", long)
	}
	if quiet := Parse([]byte("no nccl logs here\n")); quiet.Debug || quiet.Unread([]string{"NCCL_ALGO=Ring"}) != nil {
		t.Errorf("without INFO lines nothing can be confirmed: %+v", quiet)
	}
}

// TestDecisions reads NCCL's TUNING lines (enqueue.cc: "%s: %ld Bytes -> Algo
// %s proto %s channel{Lo..Hi}={%d..%d}") with every name ncclAlgoToString and
// ncclProtoToString give, keeping each as NCCL spells it.
func TestDecisions(t *testing.T) {
	algos := []string{"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT", "Unknown"}
	protos := []string{"LL", "LL128", "SIMPLE"}
	var log strings.Builder
	var want []Decision
	for i, a := range algos {
		p := protos[i%len(protos)]
		fmt.Fprintf(&log, "node1:1:9 [0] NCCL INFO AllReduce: %d Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}\n", 1<<i, a, p, i, 2*i)
		want = append(want, Decision{Op: "AllReduce", Bytes: 1 << i, Algo: a, Proto: p, Channels: i + 1})
	}
	// Once per operation and size; a range the wrong way round is not a decision.
	log.WriteString("node1:1:9 [0] NCCL INFO AllReduce: 1 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..3}\n")
	log.WriteString("node1:1:9 [0] NCCL INFO AllGather: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={3..0}\n")
	if got := Parse([]byte(log.String())).Decisions; !slices.Equal(got, want) {
		t.Errorf("decisions\n got %+v\nwant %+v", got, want)
	}
}

// TestRanksThatReadAnotherValueAreNotConfirmed: a variable is confirmed only
// where every rank, and every launch of the trial, read the value set; a
// rank that read another is not masked by the line read last.
func TestRanksThatReadAnotherValueAreNotConfirmed(t *testing.T) {
	line := func(rank int, value string) string {
		return fmt.Sprintf("node1:12:12 [%d] NCCL INFO NCCL_ALGO set by environment to %s.\n", rank, value)
	}
	agree, apart := Parse([]byte(line(0, "Ring")+line(1, "ring"))), Parse([]byte(line(0, "Tree")+line(1, "Ring")))
	for _, tc := range []struct {
		name string
		log  Log
		want []string
	}{
		{"every rank read it", agree, nil},
		{"one rank read another, before the others", apart, []string{"NCCL_ALGO"}},
		{"another launch read another", agree.Merge(Parse([]byte(line(0, "Tree")))), []string{"NCCL_ALGO"}},
		{"launches that agree", agree.Merge(agree), nil},
	} {
		if got := tc.log.Unconfirmed([]string{"NCCL_ALGO=Ring"}); !slices.Equal(got, tc.want) {
			t.Errorf("%s: unconfirmed %v, want %v (read %q)", tc.name, got, tc.want, tc.log.Read)
		}
	}
}

// TestRejectedIsNotConfirmed: a variable NCCL logged reading but then said
// it would not use as given (its own lines, from misc/param.cc,
// graph/tuning.cc, init.cc and graph/topo.cc) is not confirmed; a line
// that only echoes a value holding such words rejects nothing.
func TestRejectedIsNotConfirmed(t *testing.T) {
	const p = "node1:12:12 [0] NCCL INFO "
	for _, tc := range []struct {
		name, log, env string
		rejected       bool
	}{
		{"threads not a multiple of the warp", p + "NCCL_NTHREADS set by environment to 100.\n" + p + "Invalid NCCL_NTHREADS 100 (must be a multiple of 32)\n", "NCCL_NTHREADS=100", true},
		{"threads above the maximum", p + "NCCL_NTHREADS set by environment to 1024.\n" + p + "Invalid NCCL_NTHREADS 1024 (maximum 512).\n", "NCCL_NTHREADS=1024", true},
		{"an unparsable number", p + "Invalid value 99999999999999999999 for NCCL_IB_TIMEOUT, using default 20.\n", "NCCL_IB_TIMEOUT=99999999999999999999", true},
		{"too low", p + "NCCL_MIN_CTAS set by environment to 0.\n" + p + "NCCL_MIN_CTAS 0 is too low, leaving it set at 1\n", "NCCL_MIN_CTAS=0", true},
		{"clamped to the config's maximum", p + "NCCL_MIN_CTAS set by environment to 32.\n" + p + "minCTAs 32 is larger than maxCTAs 16, set both to 16\n", "NCCL_MIN_CTAS=32", true},
		// net_socket.cc: NCCL's own thread count (2 on AWS, 4 on GCP) times it is over 64.
		{"sockets cut to 64", p + "NCCL_NSOCKS_PERTHREAD set by environment to 32.\n" + "node1:12:12 [0] net_socket.cc:331 NCCL WARN NET/Socket : the total number of sockets is greater than the maximum allowed, setting NCCL_NSOCKS_PERTHREAD to 16\n", "NCCL_NSOCKS_PERTHREAD=32", true},
		{"a warning", p + "NCCL_NET_MERGE_POLICY set by environment to RAIL\n" + "node1:12:12 [0] NCCL WARN NCCL_NET_MERGE_POLICY: unknown value 'RAIL', defaulting to ALL\n", "NCCL_NET_MERGE_POLICY=RAIL", true},
		{"on another rank, tagged", p + "NCCL_NTHREADS set by environment to 100.\n[1,1]<stdout>:node2:7:7 [1] NCCL INFO Invalid NCCL_NTHREADS 100 (must be a multiple of 32)\n", "NCCL_NTHREADS=100", true},
		{"a value that holds the words", p + "NCCL_SOCKET_IFNAME set by environment to =ignored-invalid0\n" + p + "NCCL_SOCKET_IFNAME set to =ignored-invalid0\n", "NCCL_SOCKET_IFNAME==ignored-invalid0", false},
		{"the variable that made NCCL ignore something", p + "NCCL_IGNORE_NET_MISMATCH set by environment to 1.\n" + p + "Detected mixed local Net device counts across ranks (min 1, max 2). Ignoring due to NCCL_IGNORE_NET_MISMATCH.\n", "NCCL_IGNORE_NET_MISMATCH=1", false},
		{"a hint naming a variable", p + "NCCL_CROSS_NIC set by environment to 1.\n" + p + "HINT: To confirm, you can set NCCL_CROSS_NIC=0 to disable cross-rail communication.\n", "NCCL_CROSS_NIC=1", false},
	} {
		l := Parse([]byte(tc.log))
		got := l.Unconfirmed([]string{tc.env})
		if (len(got) == 1) != tc.rejected {
			t.Errorf("%s: unconfirmed %v, want rejected %v (read %q)", tc.name, got, tc.rejected, l.Read)
		}
		// Another launch of the trial that read it cleanly does not undo the rejection.
		clean := Parse([]byte(p + strings.Replace(tc.env, "=", " set by environment to ", 1) + "\n"))
		if merged := clean.Merge(l).Unconfirmed([]string{tc.env}); (len(merged) == 1) != tc.rejected {
			t.Errorf("%s: merged with a clean launch, unconfirmed %v", tc.name, merged)
		}
	}
}

// TestInheritedAreWhatTheTrialDidNotSet: a variable NCCL read that the
// trial's environment does not set (a config file's, a remote shell's) is
// reported with the value read; the trial's own and NCCL's log settings are not.
func TestInheritedAreWhatTheTrialDidNotSet(t *testing.T) {
	const p = "node1:12:12 [0] NCCL INFO "
	l := Parse([]byte(p + "NCCL_DEBUG_SUBSYS set by environment to INIT,ENV.\n" +
		p + "NCCL_ALGO set by environment to Ring.\n" +
		p + "NCCL_BUFFSIZE set by environment to 8388608.\n" +
		"[1,1]<stdout>:node2:7:7 [1] NCCL INFO NCCL_BUFFSIZE set by environment to 4194304.\n" +
		p + "NCCL_NVLS_ENABLE set by environment to 0.\n"))
	got := l.Inherited([]string{"NCCL_ALGO=Tree", "NCCL_NVLS_ENABLE=0"})
	want := []string{"NCCL_BUFFSIZE=8388608" + readApart + "4194304"}
	if !slices.Equal(got, want) {
		t.Errorf("Inherited = %q, want %q", got, want)
	}
	if got := Parse(nil).Inherited(nil); got != nil {
		t.Errorf("an empty log inherits %q", got)
	}
}

// TestConfigFileOnRealNCCL: NCCL 2.28.9 on an H100, one rank, with
// NCCL_CONF_FILE naming a file of NCCL_BUFFSIZE=8388608: NCCL logs reading
// the file's variable as set by environment, and nothing of NCCL_CONF_FILE.
func TestConfigFileOnRealNCCL(t *testing.T) {
	out, err := os.ReadFile("testdata/h100-nccl2.28.9-conf-file.txt")
	if err != nil {
		t.Fatal(err)
	}
	l := Parse(out)
	env := []string{"NCCL_CONF_FILE=/tmp/my.conf", "NCCL_NVLS_ENABLE=0"}
	if got := l.Inherited(env); !slices.Equal(got, []string{"NCCL_BUFFSIZE=8388608"}) {
		t.Errorf("Inherited = %q", got)
	}
	if got := l.Unconfirmed(env); len(got) > 0 || len(l.Rejected) > 0 {
		t.Errorf("unconfirmed %q, rejected %q", got, l.Rejected)
	}
}

// TestGDRIsWhatConnectionsUse: NCCL names each HCA that could do GPUDirect
// RDMA ("NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'", topo.cc, at
// NCCL_DEBUG_SUBSYS=NET), and then, per GPU, whether it does. That line was
// read as GPUDirect RDMA in use, so a GPU too far from its NIC, the very
// case of the warm start's NCCL_NET_GDR_LEVEL=SYS remedy and of doctor's
// "possible but unused", read as using it.
func TestGDRIsWhatConnectionsUse(t *testing.T) {
	const head = `node1:123:123 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'
node1:123:123 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>
node1:123:123 [0] NCCL INFO Using network IB
`
	for _, tc := range []struct {
		name, log string
		gdr       bool
	}{
		{"too far (2.28)", head + "node1:123:123 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 0 / HCA 0 (distance 5 > 4)\n" +
			"node1:123:145 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0\n", false},
		{"near (2.28)", head + "node1:123:123 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 0 / HCA 0 (distance 4 <= 4), read 1 mode Default\n" +
			"node1:123:145 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n", true},
		{"near (2.18), no connection logged", head + "node1:123:123 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 1b000 / HCA 0 (distance 4 <= 4), read 1\n", true},
		// NCCL 2.29 names the GPU and NIC by their topology ids (paths.cc).
		{"near (2.29), no connection logged", head + "node1:123:123 [0] NCCL INFO GPU Direct RDMA Enabled for GPU/0-110592 (rank 0) - NET/0-0 (distance 4 <= 4, read 1, mode Default)\n", true},
		{"too far (2.29)", head + "node1:123:123 [0] NCCL INFO GPU Direct RDMA Disabled for GPU/0-110592 (rank 0) - NET/0-0 (distance 5 > 4)\n", false},
	} {
		if l := Parse([]byte(tc.log)); l.GDR != tc.gdr {
			t.Errorf("%s: GDR %t, want %t", tc.name, l.GDR, tc.gdr)
		}
	}
}

// TestLevelsAreConfirmedByTheirNames: NCCL logs a level it read by its
// name (ncclGetLevel: "NCCL_NET_GDR_LEVEL set by environment to SYS" for
// 4 or 5), so that a level's number was never confirmed, and validation
// refused every configuration that chose one as not confirmed.
func TestLevelsAreConfirmedByTheirNames(t *testing.T) {
	const p = "node1:12:12 [0] NCCL INFO "
	for _, tc := range []struct {
		log, env  string
		confirmed bool
	}{
		{p + "NCCL_NET_GDR_LEVEL set by environment to SYS\n", "NCCL_NET_GDR_LEVEL=4", true},
		{p + "NCCL_NET_GDR_LEVEL set by environment to SYS\n", "NCCL_NET_GDR_LEVEL=5", true},
		{p + "NCCL_P2P_LEVEL set by environment to PIX\n", "NCCL_P2P_LEVEL=1", true},
		{p + "NCCL_P2P_LEVEL set by environment to PIX\n", "NCCL_P2P_LEVEL=2", false},
		{p + "NCCL_NET_GDR_LEVEL set by environment to PHB\n", "NCCL_NET_GDR_LEVEL=PHB", true},
		{p + "NCCL_PROTO set by environment to LL\n", "NCCL_PROTO=LL,Simple", false},
	} {
		l := Parse([]byte(tc.log))
		if got := l.Unconfirmed([]string{tc.env}); (len(got) == 0) != tc.confirmed {
			t.Errorf("%s after %q: unconfirmed %v, want confirmed %v", tc.env, tc.log, got, tc.confirmed)
		}
	}
}

// TestAdaptersAreConfirmed: NCCL logs the NCCL_IB_HCA it reads as "NCCL_IB_HCA
// set to X" (net_ib, every version since 2.18), never "set by environment
// to", so that a searched NCCL_IB_HCA was never confirmed and validation
// refused every configuration that chose one.
func TestAdaptersAreConfirmed(t *testing.T) {
	const p = "node1:12:12 [0] NCCL INFO "
	l := Parse([]byte(p + "NCCL_IB_HCA set to =mlx5_0:1,mlx5_1:1\n"))
	if got := l.Unconfirmed([]string{"NCCL_IB_HCA==mlx5_0:1,mlx5_1:1"}); len(got) != 0 {
		t.Errorf("unconfirmed %v (read %q)", got, l.Read)
	}
	if got := l.Unconfirmed([]string{"NCCL_IB_HCA=mlx5_2"}); len(got) != 1 {
		t.Errorf("another adapter confirmed: %v (read %q)", got, l.Read)
	}
}

// TestNetworkIsConfirmedByItsUse: NCCL logs no "set by environment" line
// of NCCL_NET (init.cc copies it into the communicator's config), but the
// network it picked by that name, strcasecmp's ("Using network IB"), so
// that a searched NCCL_NET was never confirmed and validation refused
// every configuration that chose one.
func TestNetworkIsConfirmedByItsUse(t *testing.T) {
	const p = "node1:12:12 [0] NCCL INFO "
	l := Parse([]byte(p + "NCCL_IB_DISABLE set by environment to 0.\n" + p + "Using network IB\n"))
	if got := l.Unconfirmed([]string{"NCCL_NET=IB", "NCCL_IB_DISABLE=0"}); len(got) != 0 {
		t.Errorf("unconfirmed %v (network %q)", got, l.Network)
	}
	if got := l.Unconfirmed([]string{"NCCL_NET=Socket"}); len(got) != 1 {
		t.Errorf("NCCL_NET=Socket confirmed by the IB network: %v", got)
	}
}

// TestNetworkOfAPluginConfirms: a net plugin's name may hold a blank (the
// AWS OFI plugin's "AWS Libfabric", which NCCL_NET names): the network was
// read up to it, "AWS", which confirmed no NCCL_NET of the plugin's name.
func TestNetworkOfAPluginConfirms(t *testing.T) {
	const p = "node1:12:12 [0] NCCL INFO "
	l := Parse([]byte(p + "Using network AWS Libfabric\n"))
	if got := l.Unconfirmed([]string{"NCCL_NET=AWS Libfabric"}); len(got) != 0 || l.Network != "AWS Libfabric" {
		t.Errorf("unconfirmed %v (network %q)", got, l.Network)
	}
	if got := l.Unconfirmed([]string{"NCCL_NET=AWS"}); len(got) != 1 {
		t.Errorf("NCCL_NET=AWS confirmed by the network AWS Libfabric: %v", got)
	}
}

// TestValuesNCCLReadsWithoutALine: NCCL 2.28.9 reads NCCL_P2P_DISABLE in
// ncclGetLevel, which logs it only where it is 1 (paths.cc), and a tuner
// plugin reads NCCL_TUNER_CONFIG_FILE with getenv, which NCCL never logs:
// a trial with NCCL_P2P_DISABLE=0 was held unconfirmed whatever its log
// said, so that validation refused every configuration that chose it.
func TestValuesNCCLReadsWithoutALine(t *testing.T) {
	const p = "node1:12:12 [0] NCCL INFO "
	quiet := Parse([]byte(p + "NCCL_ALGO set by environment to Ring\n"))
	for _, tc := range []struct {
		log       Log
		env       string
		confirmed bool
	}{
		{quiet, "NCCL_P2P_DISABLE=0", true},
		{quiet, "NCCL_TUNER_CONFIG_FILE=/etc/tuner.conf", true},
		{quiet, "NCCL_P2P_DISABLE=1", false},
		{Parse([]byte(p + "NCCL_P2P_DISABLE set by environment to 1\n")), "NCCL_P2P_DISABLE=1", true},
		// A line that says otherwise (a rank's config file) still contradicts it.
		{Parse([]byte(p + "NCCL_P2P_DISABLE set by environment to 1\n")), "NCCL_P2P_DISABLE=0", false},
	} {
		if got := tc.log.Unconfirmed([]string{tc.env}); (len(got) == 0) != tc.confirmed {
			t.Errorf("%s: unconfirmed %v, want confirmed %v", tc.env, got, tc.confirmed)
		}
	}
}

// TestValueCutByNCCLsLineIsConfirmed: NCCL 2.28.9 writes each record of its
// log from a buffer of 1024 bytes (debug.cc), its newline the last: a
// value whose line is longer, a long NCCL_TOPO_FILE path or NCCL_IB_HCA
// list, is logged cut at 1023 bytes, and was never confirmed, so that
// validation refused every configuration that set it. A value cut short in
// a line under the cap is another value.
func TestValueCutByNCCLsLineIsConfirmed(t *testing.T) {
	value := "/shared/topology/" + strings.Repeat("x", 1500) + ".xml"
	record := func(prefix string) string {
		line := prefix + "node1:12:12 [0] NCCL INFO NCCL_TOPO_FILE set by environment to " + value
		return line[:len(prefix)+1023] + "\n"
	}
	onNode10 := strings.Replace(record(""), "node1:", "node10:", 1)[:1023] + "\n"
	env := []string{"NCCL_TOPO_FILE=" + value}
	for _, tc := range []struct {
		name, log string
		confirmed bool
	}{
		{"cut at 1023 bytes", record(""), true},
		{"cut, tagged by srun --label", record(" 3: "), true},
		{"cut by both ranks", record("") + record("[1,1]<stdout>:"), true},
		{"cut at another length on a host of a longer name", record("") + onNode10, true},
		{"short of the cap", "node1:12:12 [0] NCCL INFO NCCL_TOPO_FILE set by environment to " + value[:100] + "\n", false},
	} {
		l := Parse([]byte(tc.log))
		if got := l.Unconfirmed(env); (len(got) == 0) != tc.confirmed {
			t.Errorf("%s: unconfirmed %v, want confirmed %v (read %.40q...)", tc.name, got, tc.confirmed, l.Read["NCCL_TOPO_FILE"])
		}
	}
	if got := Parse([]byte(record(""))).Unconfirmed([]string{"NCCL_TOPO_FILE=/other" + value}); len(got) != 1 {
		t.Errorf("another path confirmed by a cut one: %v", got)
	}
}
