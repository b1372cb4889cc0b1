package export

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/plugin"
	"github.com/nccltune/nccltune/space"
)

// FuzzEnvFileRoundTrip: variables (NAME=value lines of vars) that an env or
// a dotenv file can hold, written as export writes them, read back with
// ReadEnvFile as they were written.
func FuzzEnvFileRoundTrip(f *testing.F) {
	f.Add("NCCL_SOCKET_IFNAME==eth0,it's\nNCCL_IB_HCA=\\'a\\\\\nNCCL_ALGO=allreduce:tree,ring;allgather:ring", false)
	f.Add("NCCL_BUFFSIZE=4M\nNCCL_PROTO=simple\n"+plugin.RulesEnv+"=/etc/nccl rules.json", true)
	f.Add("NCCL_SOCKET_IFNAME= #eth0 \nNCCL_IB_HCA=", false)
	f.Fuzz(func(t *testing.T, vars string, dotenv bool) {
		line := ExportLine
		if dotenv {
			line = dotenvLine
		}
		want := map[string]string{}
		for _, kv := range strings.Split(vars, "\n") {
			name, value, _ := strings.Cut(kv, "=")
			value, err := checked(name, value)
			if err != nil {
				continue // not a setting export writes
			}
			if _, err := line(name, value); err == nil {
				want[name] = value
			}
		}
		var env []string
		for _, name := range slices.Sorted(maps.Keys(want)) {
			env = append(env, name+"="+want[name])
		}
		var b strings.Builder
		b.WriteString(comment([]string{"nccltune: " + vars}, "# "))
		if err := writeLines(&b, env, line); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "nccl.env")
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadEnvFile(path)
		if err != nil || !slices.Equal(got, env) {
			t.Fatalf("wrote %q, read %q, %v", b.String(), got, err)
		}
	})
}

// TestReadEnvFileReadsTheLongestValue: the longest value a variable may
// hold, written by ExportLine with every byte quoted, reads back. (Not of a
// list of names, which NCCL copies 64 bytes of each.)
func TestReadEnvFileReadsTheLongestValue(t *testing.T) {
	const name = "NCCL_NET"
	value := strings.Repeat("'", space.MaxArgStrlen-len(name)-2)
	if _, err := checked(name, value); err != nil {
		t.Fatal(err)
	}
	line, err := ExportLine(name, value)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "long.env")
	os.WriteFile(path, []byte(line+"\n"), 0o644)
	if env, err := ReadEnvFile(path); err != nil || len(env) != 1 || env[0] != name+"="+value {
		t.Errorf("read %.40q..., %v", env, err)
	}
}
