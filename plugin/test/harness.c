/*
 * Drives the tuner plugin the way NCCL does, without NCCL or a GPU, for the
 * tests in ../plugin_test.go.
 *
 *   harness LIB VERSION NNODES NRANKS [THREADS [COMMS]] < queries
 *
 * dlopens LIB, takes its ncclTunerPlugin_vVERSION (4, 5 or 6), calls init for
 * a communicator of NNODES nodes and NRANKS ranks (the rules file comes from
 * $NCCLTUNE_RULES, as in a job), then getCollInfo once per query line
 *
 *   FUNC BYTES NALGO NPROTO COST...   (ncclFunc_t value, NALGO*NPROTO costs, algorithm-major)
 *
 * and finally finalize. With THREADS, that many threads run every query on
 * the one context at once and must all see the same results. With COMMS, that
 * many communicators of the process call init, one after another, the last
 * one's context answering the queries, and all finalize. With no queries
 * it only loads the file and prints the log: the fuzzer's mode.
 *
 * Output, one line each, in this order:
 *   plugin NAME                  and for v6: chunksize none|set
 *   log LEVEL FLAGS MESSAGE      every message the plugin logs, as it logs it
 *   query rc=RC channels=N|- changed=-|A/P:COST,...
 *                                per query: what getCollInfo returned, set
 *                                *nChannels to (-: untouched), and the cost
 *                                entries it changed (-: the table is byte-identical)
 *   finalize rc=RC
 * Errors of the harness itself go to stderr with exit status 2.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/tuner_abi.h"

#define MAX_QUERIES 256
#define MAX_COSTS 64
#define MAX_THREADS 16
#define MAX_COMMS 16
#define LINE 2048
#define UNTOUCHED INT_MIN /* NCCL passes 0; a value no plugin would write shows "untouched" */

struct query {
  int func;
  unsigned long long bytes;
  int numAlgo, numProto;
  float cost[MAX_COSTS];
};

/* What the three versions have in common, once init has run. */
struct api {
  void* context;
  ncclTunerGetCollInfo_t getCollInfo;
  ncclResult_t (*finalize)(void* context);
};

static struct query queries[MAX_QUERIES];
static int nQueries;
static struct api api;
static pthread_mutex_t logMutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start; /* so that the threads' first calls race */

__attribute__((format(printf, 1, 2))) _Noreturn static void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("harness: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  char msg[LINE];
  va_list ap;
  (void)file;
  (void)line;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&logMutex);
  printf("log %s %#lx %s\n", level == NCCL_LOG_WARN ? "WARN" : level == NCCL_LOG_INFO ? "INFO" : "OTHER", flags, msg);
  pthread_mutex_unlock(&logMutex);
}

static void readQueries(void) {
  char line[LINE];
  while (fgets(line, sizeof(line), stdin)) {
    struct query* q = &queries[nQueries];
    char* s = line;
    int used;
    if (nQueries == MAX_QUERIES) die("more than %d queries", MAX_QUERIES);
    if (sscanf(s, "%d %llu %d %d%n", &q->func, &q->bytes, &q->numAlgo, &q->numProto, &used) != 4 ||
        q->numAlgo < 0 || q->numProto < 0 || q->numAlgo * q->numProto > MAX_COSTS) {
      die("bad query: %s", line);
    }
    for (int i = 0; i < q->numAlgo * q->numProto; i++) {
      s += used;
      if (sscanf(s, "%f%n", &q->cost[i], &used) != 1) die("query needs %d costs: %s", q->numAlgo * q->numProto, line);
    }
    nQueries++;
  }
}

/* Appends to out, a string in LINE bytes. */
__attribute__((format(printf, 2, 3))) static void add(char out[LINE], const char* fmt, ...) {
  size_t len = strlen(out);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out + len, LINE - len, fmt, ap);
  va_end(ap);
}

/* Runs query q and describes what the plugin did in out. */
static void run(const struct query* q, char out[LINE]) {
  /* Exactly NCCL's size, so that the address sanitizer sees a read or write past it. */
  size_t n = (size_t)(q->numAlgo * q->numProto);
  float* table = malloc(n ? n * sizeof(float) : 1);
  int nChannels = UNTOUCHED;
  bool changed = false;
  if (!table) die("out of memory");
  memcpy(table, q->cost, n * sizeof(float));
  ncclResult_t rc = api.getCollInfo(api.context, (ncclFunc_t)q->func, (size_t)q->bytes, 1, (float**)table,
                                    q->numAlgo, q->numProto, 0, &nChannels);
  out[0] = '\0';
  add(out, "query rc=%d channels=", (int)rc);
  if (nChannels == UNTOUCHED) add(out, "-");
  else add(out, "%d", nChannels);
  add(out, " changed=");
  for (int i = 0; i < q->numAlgo * q->numProto; i++) {
    if (memcmp(&table[i], &q->cost[i], sizeof(float)) == 0) continue;
    add(out, "%s%d/%d:%g", changed ? "," : "", i / q->numProto, i % q->numProto, (double)table[i]);
    changed = true;
  }
  if (!changed) add(out, "-");
  free(table);
}

static void* runAll(void* arg) {
  char(*out)[LINE] = arg;
  pthread_barrier_wait(&start);
  for (int i = 0; i < nQueries; i++) run(&queries[i], out[i]);
  return NULL;
}

/* Calls the version's init with what NCCL would pass; fills api. */
static ncclResult_t init(void* symbol, int version, size_t nNodes, size_t nRanks) {
  /* Stands in for NCCL's tuner constants; the plugin must leave them as they are. */
  static unsigned char constants[4096], constantsBefore[sizeof(constants)];
  static unsigned char nvlDomainInfo[64];
  ncclResult_t rc;
  for (size_t i = 0; i < sizeof(constants); i++) constants[i] = constantsBefore[i] = (unsigned char)i;
  switch (version) {
    case 4: {
      const ncclTuner_v4_t* t = symbol;
      printf("plugin %s\n", t->name);
      api.getCollInfo = t->getCollInfo;
      api.finalize = t->destroy;
      rc = t->init(nRanks, nNodes, logger, &api.context);
      break;
    }
    case 5: {
      const ncclTuner_v5_t* t = symbol;
      printf("plugin %s\n", t->name);
      api.getCollInfo = t->getCollInfo;
      api.finalize = t->finalize;
      rc = t->init(&api.context, 0x1234, nRanks, nNodes, logger, (ncclNvlDomainInfo_v5_t*)nvlDomainInfo,
                   (ncclTunerConstants_v5_t*)constants);
      break;
    }
    case 6: {
      const ncclTuner_v6_t* t = symbol;
      printf("plugin %s\nchunksize %s\n", t->name, t->getChunkSize ? "set" : "none");
      api.getCollInfo = t->getCollInfo;
      api.finalize = t->finalize;
      rc = t->init(&api.context, 0x1234, nRanks, nNodes, logger, (ncclNvlDomainInfo_v5_t*)nvlDomainInfo,
                   (ncclTunerConstants_v5_t*)constants);
      break;
    }
    default:
      die("version %d: want 4, 5 or 6", version);
  }
  if (memcmp(constants, constantsBefore, sizeof(constants)) != 0) die("init changed NCCL's tuner constants");
  return rc;
}

int main(int argc, char** argv) {
  char symbol[32];
  if (argc < 5 || argc > 7) die("usage: harness LIB VERSION NNODES NRANKS [THREADS [COMMS]] < queries");
  int version = atoi(argv[2]);
  int threads = argc >= 6 ? atoi(argv[5]) : 1;
  int comms = argc == 7 ? atoi(argv[6]) : 1;
  void* others[MAX_COMMS]; /* the contexts of the communicators before the last */
  if (threads < 1 || threads > MAX_THREADS) die("threads: want 1 to %d", MAX_THREADS);
  if (comms < 1 || comms > MAX_COMMS) die("comms: want 1 to %d", MAX_COMMS);
  readQueries();

  /* RTLD_LOCAL as NCCL does; the library stays loaded so that sanitizer reports can name its code. */
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) die("%s", dlerror());
  snprintf(symbol, sizeof(symbol), "ncclTunerPlugin_v%d", version);
  void* sym = dlsym(lib, symbol);
  if (!sym) die("no %s in %s", symbol, argv[1]);
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (int c = 0; c < comms; c++) {
    ncclResult_t rc = init(sym, version, (size_t)strtoull(argv[3], NULL, 10), (size_t)strtoull(argv[4], NULL, 10));
    if (rc != ncclSuccess) die("init returned %d", (int)rc);
    if (c < comms - 1) others[c] = api.context;
  }

  char(*out)[MAX_QUERIES][LINE] = calloc((size_t)threads, sizeof(*out));
  pthread_t tids[MAX_THREADS];
  if (!out || pthread_barrier_init(&start, NULL, (unsigned)threads) != 0) die("cannot set up %d threads", threads);
  for (int t = 0; t < threads; t++) {
    if (pthread_create(&tids[t], NULL, runAll, out[t]) != 0) die("cannot start thread %d", t);
  }
  for (int t = 0; t < threads; t++) pthread_join(tids[t], NULL);
  for (int i = 0; i < nQueries; i++) {
    for (int t = 1; t < threads; t++) {
      if (strcmp(out[0][i], out[t][i]) != 0) die("query %d: thread %d got \"%s\", thread 0 \"%s\"", i + 1, t, out[t][i], out[0][i]);
    }
    printf("%s\n", out[0][i]);
  }
  free(out);
  for (int c = 0; c < comms - 1; c++) printf("finalize rc=%d\n", (int)api.finalize(others[c]));
  printf("finalize rc=%d\n", (int)api.finalize(api.context));
  api.context = NULL; /* what finalize did not free is a leak for the sanitizer to report */
  return 0;
}
