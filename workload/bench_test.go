package workload

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkRead1GB reads 1 GiB of the interleaved COLL log of a 16-rank
// job, made on the fly by repeating a few MiB of it, so that none of it
// is stored: go test -bench Read1GB -run '^$' ./workload.
func BenchmarkRead1GB(b *testing.B) {
	block := jobLog(64)
	size := int64(1<<30) / int64(len(block)) * int64(len(block))
	b.SetBytes(size)
	for b.Loop() {
		w, err := Read(&repeat{block: block, left: size})
		if err != nil {
			b.Fatal(err)
		}
		if len(w.Entries) != 7 || w.Source.Processes != 16 || w.Source.Malformed != 0 {
			b.Fatalf("entries %v, source %+v", w.Entries, w.Source)
		}
	}
}

// BenchmarkReadBound reads a log of ever new sizes until Read refuses it,
// at maxState, and reports the heap it held then, the most it holds of any
// log: go test -bench ReadBound -run '^$' ./workload.
func BenchmarkReadBound(b *testing.B) {
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Read(&newSizes{})
		runtime.ReadMemStats(&after) // before the state Read kept is collected
		if err == nil || !strings.Contains(err.Error(), "distinct processes") {
			b.Fatal(err)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-held")
	}
}

// newSizes reads COLL lines of one process, each of a size not logged before.
type newSizes struct {
	n    int
	line []byte
}

func (r *newSizes) Read(p []byte) (int, error) {
	if len(r.line) == 0 {
		r.n++
		r.line = []byte(rank0 + strings.Replace(allRed, "count 1024", "count "+strconv.Itoa(r.n), 1) + "\n")
	}
	n := copy(p, r.line)
	r.line = r.line[n:]
	return n, nil
}

// repeat reads block over and over, left bytes in all.
type repeat struct {
	block []byte
	off   int
	left  int64
}

func (r *repeat) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(int64(len(p)), r.left)], r.block[r.off:])
	r.off = (r.off + n) % len(r.block)
	r.left -= int64(n)
	return n, nil
}

// jobLog returns steps training steps of a job of two nodes of eight GPUs
// (tensor parallel 8, data parallel 2, an alltoall of grouped Send/Recv
// over all 16), every rank's lines interleaved as a launcher merges them,
// with a progress line from each rank now and then.
func jobLog(steps int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var ranks [16][][]byte
	for r := range ranks {
		host, pid := fmt.Sprintf("gpu-node-%03d", r/8), 40000+r*13
		opCount := map[string]int{}
		call := func(op, comm string, nranks, count, dtype, root int) {
			buf := 0x7f3a00000000 + rng.IntN(1<<24)*256
			ranks[r] = append(ranks[r], fmt.Appendf(nil,
				"%s:%d:%d [%d] NCCL INFO %s: opCount %x sendbuff 0x%x recvbuff 0x%x count %d datatype %d op 0 root %d comm 0x55d0c8a3e2d0 [nranks=%d] stream 0x55a0c11e2000\n",
				host, pid, pid, r%8, op, opCount[comm], buf, buf, count, dtype, root, nranks))
			opCount[comm]++
		}
		for step := range steps {
			for layer := range 24 {
				call("AllReduce", "tp", 8, 4194304+layer%3*1024, 9, 0)
				call("AllReduce", "tp", 8, 4194304+layer%3*1024, 9, 0)
			}
			for peer := range 16 {
				call("Send", "world", 16, 65536, 9, peer)
				call("Recv", "world", 16, 65536, 9, peer)
			}
			call("ReduceScatter", "dp", 2, 25165824, 7, 0)
			call("AllGather", "dp", 2, 25165824, 9, 0)
			call("AllReduce", "world", 16, 1, 7, 0)
			ranks[r] = append(ranks[r], fmt.Appendf(nil, "[rank%d] step %d | loss %.4f | 312.5 TFLOP/s\n", r, step, rng.Float64()))
		}
	}
	var out []byte
	for left := true; left; {
		left = false
		for _, r := range rng.Perm(len(ranks)) {
			if len(ranks[r]) > 0 {
				out = append(out, ranks[r][0]...)
				ranks[r] = ranks[r][1:]
				left = true
			}
		}
	}
	return out
}
