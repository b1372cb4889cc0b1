/*
 * The parts of NCCL's tuner plugin interface that nccltune's plugin uses,
 * declared here so that it builds with a C compiler alone.
 *
 * They mirror NCCL's src/include/nccl.h.in (ncclResult_t),
 * src/include/nccl_common.h (logger, ncclFunc_t), src/include/plugin/nccl_tuner.h
 * (algorithm and protocol indices) and src/include/plugin/tuner/tuner_v4.h,
 * tuner_v5.h and tuner_v6.h, which are the same in every release that has
 * them (v4 from 2.24, v5 from 2.28, v6 from 2.30; checked up to 2.30.7).
 * Values NCCL added later (ncclFunc_t past ncclFuncAlltoAll, new subsystems)
 * are left out.
 */
#ifndef NCCLTUNE_TUNER_ABI_H_
#define NCCLTUNE_TUNER_ABI_H_

#include <stddef.h>
#include <stdint.h>

typedef enum { ncclSuccess = 0 } ncclResult_t;

typedef enum {
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
} ncclDebugLogLevel;

typedef enum {
  NCCL_INIT = 0x1,
  NCCL_TUNING = 0x40,
  NCCL_ALL = ~0,
} ncclDebugLogSubSys;

/* The format attribute is ours: it lets the compiler check our messages. */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...) __attribute__((format(printf, 5, 6)));

/* ncclFuncAlltoAll exists from NCCL 2.28; before, 8 was the ncclNumFuncs sentinel. */
typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
  ncclFuncSendRecv = 5,
  ncclFuncSend = 6,
  ncclFuncRecv = 7,
  ncclFuncAlltoAll = 8,
} ncclFunc_t;

#define NCCL_ALGO_TREE 0
#define NCCL_ALGO_RING 1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN 3
#define NCCL_ALGO_NVLS 4
#define NCCL_ALGO_NVLS_TREE 5
#define NCCL_ALGO_PAT 6
#define NCCL_NUM_ALGORITHMS 7

#define NCCL_PROTO_LL 0
#define NCCL_PROTO_LL128 1
#define NCCL_PROTO_SIMPLE 2
#define NCCL_NUM_PROTOCOLS 3

#define NCCL_ALGO_PROTO_IGNORE -1.0

/* The plugin reads neither; only pointers to them cross the interface. */
typedef struct ncclNvlDomainInfo_v5 ncclNvlDomainInfo_v5_t;
typedef struct ncclTunerConstants_v5 ncclTunerConstants_v5_t;

/* collCostTable is NCCL's float[numAlgo][numProto] cast to float**. */
typedef ncclResult_t (*ncclTunerGetCollInfo_t)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                               float** collCostTable, int numAlgo, int numProto, int regBuff,
                                               int* nChannels);

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclTunerGetCollInfo_t getCollInfo;
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v4_t;

/* v5 and v6 init: v4's, plus the communicator's id, NVLink domains and NCCL's tuning constants. */
typedef ncclResult_t (*ncclTunerInit_v5_t)(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                                           ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t* nvlDomainInfo,
                                           ncclTunerConstants_v5_t* constants);

typedef struct {
  const char* name;
  ncclTunerInit_v5_t init;
  ncclTunerGetCollInfo_t getCollInfo;
  ncclResult_t (*finalize)(void* context);
} ncclTuner_v5_t;

/* v6 is v5 with an optional chunk size hook (NULL: NCCL's own). */
typedef struct {
  const char* name;
  ncclTunerInit_v5_t init;
  ncclTunerGetCollInfo_t getCollInfo;
  ncclResult_t (*finalize)(void* context);
  ncclResult_t (*getChunkSize)(void* context, ncclFunc_t collType, size_t nBytes, int algo, int proto, int nChannels,
                               size_t* chunkSize);
} ncclTuner_v6_t;

#endif
