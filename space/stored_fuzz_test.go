package space

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseStored: a stored copy of a space, however altered, is refused
// or read; read, it is Parse's space where it passes the checks, and what
// readers of results ask of it (sizes, sweeps, scales, keys) returns.
func FuzzParseStored(f *testing.F) {
	valid, _ := os.ReadFile("testdata/valid.toml")
	f.Add(string(valid))
	f.Add(hostileBase)
	f.Add(strings.Replace(hostileBase, "factor = 4", "factor = 1", 1))
	f.Add(strings.Replace(workloadSpace, `size = "8"`, `size = "257G"`, 1))
	// Quoted and escaped keys, a param listed twice, conditions on it.
	f.Add(hostileBase + "[x]\n\"\\u00e9\" = 1\n'a b' = { \"\\e\" = 2 }\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"Ring\"]\nwhen = { NCCL_NET = \"IB\" }\n[[param]]\nname = \"NCCL_PROTO\"\nvalues = [\"LL\"]\nwhen = { NCCL_ALGO = \"Ring\" }\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, checks, err := ParseStored("stored.toml", []byte(in))
		if (s == nil) != (err != nil) {
			t.Fatalf("space %v and error %v", s, err)
		}
		parsed, perr := Parse("stored.toml", []byte(in))
		if (perr == nil) != (err == nil && checks == nil) || perr == nil && !reflect.DeepEqual(parsed, s) {
			t.Fatalf("Parse: %v, %v; ParseStored: %v, %v", parsed, perr, checks, err)
		}
		if s == nil {
			return
		}
		s.Sizes.List()
		for _, coll := range s.Collectives() {
			s.Sweep(coll).List()
		}
		for _, n := range s.Campaign.Scales {
			s.AtScale(n).Hash()
		}
		s.Env(nil)
		s.Key(nil)
		s.Hash()
	})
}
