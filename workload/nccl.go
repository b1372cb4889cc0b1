package workload

// op is how one of NCCL's calls is measured by nccl-tests.
type op struct {
	collective string // the nccl-tests benchmark, without "_perf"
	perRank    bool   // NCCL's count is per rank: the benchmark's size is count × ranks
	p2p        bool   // Send or Recv (see sendrecv in read.go)
}

// ops maps the names NCCL's COLL lines give the calls (opName, set in
// src/collectives.cc, src/collectives/*.cc before 2.19) to their benchmark.
//
// nccl-tests prints as a row's "size" max(sendBytes, recvBytes), which
// setupArgs (src/common.cu) gets from each benchmark's GetCollByteCount
// (src/<name>.cu); its "count" column is the count it passes to NCCL. For a
// logged count c of a type of t bytes on a communicator of n ranks:
//
//	AllReduce      c elements in and out           all_reduce      c×t
//	Broadcast      c elements from the root         broadcast       c×t
//	Reduce         c elements to the root           reduce          c×t
//	AllGather      c = sendcount, per rank          all_gather      c×n×t (the receive buffer)
//	ReduceScatter  c = recvcount, per rank          reduce_scatter  c×n×t (the send buffer)
//	AlltoAll       c elements to each peer (2.28+)  alltoall        c×n×t
//	Send, Recv     c elements to or from one peer   sendrecv        c×t
//
// all_gather, reduce_scatter and alltoall round the per-rank count they
// derive from a size down to a multiple of 16 bytes, so a call whose
// per-rank bytes are no multiple of 16 is measured a few bytes smaller.
// NCCL's other calls (Gather and Scatter since 2.28, the one-sided
// PutSignal, Signal and WaitSignal since 2.29) have no benchmark that
// nccltune tunes; they are counted in Source.Unmeasured.
var ops = map[string]op{
	"AllReduce":     {collective: "all_reduce"},
	"Broadcast":     {collective: "broadcast"},
	"Reduce":        {collective: "reduce"},
	"AllGather":     {collective: "all_gather", perRank: true},
	"ReduceScatter": {collective: "reduce_scatter", perRank: true},
	"AlltoAll":      {collective: "alltoall", perRank: true},
	"Send":          {collective: "sendrecv", p2p: true},
	"Recv":          {collective: "sendrecv", p2p: true},
}

// typeSizes are the sizes of ncclDataType_t's values (src/nccl.h.in):
// int8, uint8, int32, uint32, int64, uint64, float16, float32, float64,
// bfloat16, and since 2.24 float8 e4m3 and e5m2. NCCL rejects any other
// value before it logs the call, so another code means a newer NCCL.
var typeSizes = [...]int64{1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1}

const maxTypeSize = 8
