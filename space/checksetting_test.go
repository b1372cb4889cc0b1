package space

import (
	"strings"
	"testing"
)

// compare reads back what export writes: a searched value may be empty
// (values = ["", "eth0"]), and export writes it (an empty NCCL_SOCKET_IFNAME), so
// CheckSetting must take it, while the word "default", which export never
// writes and NCCL reads as a value, stays refused.
func TestCheckSettingTakesWhatExportWrites(t *testing.T) {
	sp, err := Parse("s.toml", []byte(`[campaign]
name = "x"
collective = "all_reduce"
trials = 4
sizes = { min = "8", max = "1M", factor = 8 }
[[range]]
name = "all"
min = "8"
max = "1M"
[benchmark]
gpus = 8
[simulator]
nodes = 1
[[param]]
name = "NCCL_SOCKET_IFNAME"
values = ["", "eth0"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.CheckSetting("NCCL_SOCKET_IFNAME", ""); err != nil {
		t.Errorf("a value the space searches, as export writes it: %v", err)
	}
	if err := sp.CheckSetting("NCCL_IB_HCA", Unset); err == nil || !strings.Contains(err.Error(), "NCCL reads the word itself") {
		t.Errorf("NCCL_IB_HCA=default: %v, want refused", err)
	}
}

// TestCheckSettingReadsTheLogLevelAsNCCLDoes: NCCL reads NCCL_DEBUG in any
// case (strcasecmp, debug.cc), so an env file's NCCL_DEBUG=info shows the
// INFO lines; it was refused as hiding them.
func TestCheckSettingReadsTheLogLevelAsNCCLDoes(t *testing.T) {
	var sp Space
	for value, ok := range map[string]bool{"info": true, "Trace": true, "INFO": true, "warn": false} {
		if err := sp.CheckSetting("NCCL_DEBUG", value); (err == nil) != ok {
			t.Errorf("NCCL_DEBUG=%s: %v", value, err)
		}
	}
}
