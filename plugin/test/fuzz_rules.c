/*
 * A libFuzzer target for the plugin's rules parser, in one process:
 *
 *   make -C plugin fuzz [O=DIR] [FUZZ_CC=clang]   DIR/fuzzbin/fuzz_rules
 *   DIR/fuzzbin/fuzz_rules -max_total_time=60 CORPUS_DIR
 *
 * (TestLibFuzzer in ../plugin_test.go builds and runs it on the seeds of
 * ../testdata/fuzz/FuzzRules.) It includes the plugin's source, so that it
 * reaches its static parser directly, and checks for every input:
 *
 *   - parsing neither crashes nor upsets the address and undefined behaviour
 *     sanitizers, and a refusal names a line the input has, with a reason
 *     that is UTF-8 text without control characters;
 *   - every rule kept is one the plugin can apply: a known collective, sizes
 *     in order, a known algorithm and protocol or "*", at most 64 channels,
 *     and the communicator's node and rank counts or "*";
 *   - each kept rule, written out as the plugin logs it, parses back to the
 *     same rule;
 *   - getCollInfo on each kept rule's collective and sizes touches only NCCL's
 *     cost table and channel count, and sets the count only where NCCL will
 *     bound it (not CollNet, nor NVLS across nodes).
 */
#include "../src/nccltune_tuner.c"

#include <stdint.h>

#define NODES 2
#define RANKS 16

/* Every message the plugin logged, one after another. */
static char logged[64 << 10];
static size_t loggedLen;

static void capture(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  va_list ap;
  (void)level, (void)flags, (void)file, (void)line;
  if (loggedLen >= sizeof(logged) - 1) return;
  va_start(ap, fmt);
  int n = vsnprintf(logged + loggedLen, sizeof(logged) - loggedLen, fmt, ap);
  va_end(ap);
  if (n > 0) loggedLen += (size_t)n < sizeof(logged) - loggedLen ? (size_t)n : sizeof(logged) - 1 - loggedLen;
}

static void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "fuzz_rules: %s\n", what);
    abort();
  }
}

/* Parses size bytes of data as a rules file; the context, or NULL with ok false. */
static struct context* parse(const uint8_t* data, size_t size, bool* ok, struct parser* p, int* total) {
  struct context* c = NULL;
  char* text = malloc(size + 1);
  check(text != NULL, "out of memory");
  memcpy(text, data, size);
  text[size] = '\0';
  *p = (struct parser){.path = "fuzz", .line = 1};
  *ok = parseRules(p, text, size, NODES, RANKS, &c, total);
  free(text);
  return c;
}

static bool sameRule(const struct rule* a, const struct rule* b) {
  return a->coll == b->coll && a->minBytes == b->minBytes && a->maxBytes == b->maxBytes && a->nodes == b->nodes &&
         a->ranks == b->ranks && a->algo == b->algo && a->proto == b->proto && a->channels == b->channels;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  struct parser p;
  bool ok;
  int total;
  if (size > MAX_FILE_BYTES) return 0; /* readFile refuses these before parsing */
  struct context* c = parse(data, size, &ok, &p, &total);
  if (!ok) {
    int lines = 0;
    for (size_t i = 0; i < size; i++) lines += data[i] == '\n';
    if (size > 0 && data[size - 1] != '\n') lines++;
    check(c == NULL && p.err[0] != '\0', "a refusal without a reason");
    check(p.line >= 1 && p.line <= (lines > 0 ? lines : 1), "a refusal at a line the file does not have");
    for (const unsigned char* e = (const unsigned char*)p.err; *e;) {
      int len = utf8Len(e);
      check(len > 0 && *e >= 0x20 && *e != 0x7F, "a refusal with a control character or bytes that are not UTF-8");
      e += len;
    }
    return 0;
  }
  size_t n = c ? c->nRules : 0;
  check(n <= (size_t)total, "more rules kept than the file has");
  /* Write the kept rules out as the plugin logs them, and parse that again. */
  static char again[1 << 20];
  bool fits = true;
  size_t len = (size_t)snprintf(again, sizeof(again), RULES_HEADER " " RULES_VERSION "\n");
  for (size_t i = 0; i < n; i++) {
    const struct rule* r = &c->rules[i];
    check(r->coll >= 0 && r->coll < (int)COUNT(collNames) && collNames[r->coll], "an unknown collective kept");
    check(r->minBytes <= r->maxBytes, "sizes out of order kept");
    check(r->algo == ANY || (r->algo >= 0 && r->algo < NCCL_NUM_ALGORITHMS), "an unknown algorithm kept");
    check(r->proto == ANY || (r->proto >= 0 && r->proto < NCCL_NUM_PROTOCOLS), "an unknown protocol kept");
    check(r->channels >= 0 && r->channels <= MAX_CHANNELS, "a channel count NCCL cannot run kept");
    check((r->nodes == 0 || r->nodes == NODES) && (r->ranks == 0 || r->ranks == RANKS), "a rule for another communicator kept");
    loggedLen = 0;
    logRule(capture, r);
    const char* text = strstr(logged, "): ");
    check(text != NULL, "a rule logged without its text");
    if (len + strlen(text + 3) + 2 < sizeof(again)) {
      len += (size_t)snprintf(again + len, sizeof(again) - len, "%s\n", text + 3);
    } else {
      fits = false;
    }
  }
  if (fits) {
    struct parser p2;
    int total2;
    struct context* c2 = parse((const uint8_t*)again, len, &ok, &p2, &total2);
    check(ok, "the kept rules, written out, do not parse");
    size_t n2 = c2 ? c2->nRules : 0;
    check(n2 == n, "the kept rules, written out, parse as another number of rules");
    for (size_t i = 0; i < n; i++) check(sameRule(&c->rules[i], &c2->rules[i]), "a kept rule, written out, parses as another rule");
    free(c2);
  }
  /* Apply each rule as NCCL would ask: only the table and the channel count change. */
  for (size_t i = 0; c && i < n; i++) {
    const struct rule* r = &c->rules[i];
    uint64_t sizes[] = {r->minBytes, r->maxBytes, r->minBytes / 2 + r->maxBytes / 2};
    for (size_t k = 0; k < COUNT(sizes); k++) {
      float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
      for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
        for (int q = 0; q < NCCL_NUM_PROTOCOLS; q++) table[a][q] = (a + q) % 3 == 0 ? -1.0f : (float)(1 + a * NCCL_NUM_PROTOCOLS + q);
      }
      int channels = 0;
      c->log = NULL;
      check(getCollInfo(c, (ncclFunc_t)r->coll, (size_t)sizes[k], 1, (float**)table, NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, 0,
                        &channels) == ncclSuccess,
            "getCollInfo failed");
      check(channels >= 0 && channels <= MAX_CHANNELS, "getCollInfo set a channel count NCCL cannot run");
      /* NCCL's pick from the table as getCollInfo left it (topoGetAlgoInfo): channels only
       * where NCCL bounds them, never for CollNet or, across nodes, NVLS. */
      int pick = -1;
      for (int i = 0; i < NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS; i++) {
        float v = table[i / NCCL_NUM_PROTOCOLS][i % NCCL_NUM_PROTOCOLS];
        if (v >= 0.0f && (pick < 0 || v < table[pick / NCCL_NUM_PROTOCOLS][pick % NCCL_NUM_PROTOCOLS])) pick = i;
      }
      int algo = pick / NCCL_NUM_PROTOCOLS;
      check(channels == 0 || (algo != NCCL_ALGO_COLLNET_DIRECT && algo != NCCL_ALGO_COLLNET_CHAIN && algo != NCCL_ALGO_NVLS),
            "getCollInfo set a channel count for an algorithm NCCL runs on exactly that many channels");
    }
  }
  free(c);
  return 0;
}
