package examples

import (
	"io/fs"
	"testing"

	"github.com/nccltune/nccltune/space"
)

func TestExamplesLoad(t *testing.T) {
	names, err := fs.Glob(Files, "*.toml")
	if err != nil || len(names) < 2 {
		t.Fatalf("embedded examples: %v, %v", names, err)
	}
	for _, name := range names {
		data, _ := Files.ReadFile(name)
		sp, err := space.Parse(name, data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if sp.Fixed["NCCL_NVLS_ENABLE"] != "0" {
			t.Errorf("%s does not pin NCCL_NVLS_ENABLE=0", name)
		}
	}
	if _, err := Files.ReadFile(Default); err != nil {
		t.Errorf("default example %s: %v", Default, err)
	}
}
