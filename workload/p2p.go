package workload

// NCCL logs no group boundaries: ncclGroupStart and ncclGroupEnd are
// logged only by TRACE builds, and the opCount of COLL lines, bumped by
// ncclProxyStart (src/proxy.cc) after a launch and, since 2.27, only for
// work that uses the proxy thread, is the same for every call of a group
// but may be the same for ungrouped calls too.
// Each line is therefore one call, with one exception. An alltoall made of
// grouped sends and receives (NCCL before 2.28 has no other; PyTorch's
// all_to_all_single and nccl-tests' own alltoall_perf, AlltoAllRunColl in
// src/alltoall.cu, issue it so) shows as a Send to and a Recv from every
// peer, one of each, all of one count. So a run of consecutive Send and
// Recv lines of one process on one communicator, of one count and
// datatype, whose Sends go to every peer in turn (p, p+1, ... mod n) and
// whose Recvs come from every peer in turn, is one alltoall of c×n×t. Every
// other Send and Recv is part of a sendrecv of c×t (see counts.n).

// runKey names a communicator of one process.
type runKey struct {
	proc int32
	comm uint64
}

// run is the Send and Recv lines of one communicator since its last other
// line, while they can still be an alltoall.
type run struct {
	count, dtype, nranks uint64
	bytes                int64 // of one message
	sends, recvs         uint64
	firstSend, firstRecv int64 // peers
}

// sendrecv counts a Send or Recv line of process id.
func (p *parser) sendrecv(id int32, c call, bytes int64) error {
	k := runKey{id, c.comm}
	r, err := lookup(p, p.runs, k)
	if err != nil {
		return err
	}
	send := string(c.op) == "Send"
	if !r.extends(c, send) {
		if err := p.flush(k, r); err != nil {
			return err
		}
		*r = run{count: c.count, dtype: c.dtype, nranks: c.nranks, bytes: bytes}
	}
	if send {
		if r.sends == 0 {
			r.firstSend = c.root
		}
		r.sends++
	} else {
		if r.recvs == 0 {
			r.firstRecv = c.root
		}
		r.recvs++
	}
	if r.sends < r.nranks || r.recvs < r.nranks {
		return nil
	}
	*r = run{}
	return p.add(tally{proc: id, nranks: int32(c.nranks), collective: "alltoall", measured: true, bytes: bytes * int64(c.nranks)}, 1, 0)
}

// extends reports whether c continues r as an alltoall.
func (r *run) extends(c call, send bool) bool {
	if r.sends+r.recvs == 0 || c.count != r.count || c.dtype != r.dtype || c.nranks != r.nranks {
		return false
	}
	if send {
		return inTurn(r.firstSend, r.sends, c.root, r.nranks)
	}
	return inTurn(r.firstRecv, r.recvs, c.root, r.nranks)
}

// inTurn reports whether peer comes after the n peers from first, in turn.
func inTurn(first int64, n uint64, peer int64, nranks uint64) bool {
	return n == 0 || n < nranks && peer == (first+int64(n))%int64(nranks)
}

// endRun counts the run on process id's communicator comm as sendrecv
// calls: another call on it ends any alltoall.
func (p *parser) endRun(id int32, comm uint64) error {
	if len(p.runs) == 0 {
		return nil
	}
	k := runKey{id, comm}
	if r := p.runs[k]; r != nil {
		return p.flush(k, r)
	}
	return nil
}

// flush counts r's lines as sendrecv calls and empties it.
func (p *parser) flush(k runKey, r *run) error {
	if r.sends+r.recvs == 0 {
		return nil
	}
	t := tally{proc: k.proc, nranks: int32(r.nranks), collective: "sendrecv", measured: true, bytes: r.bytes}
	sends, recvs := int64(r.sends), int64(r.recvs)
	*r = run{}
	return p.add(t, sends, recvs)
}
