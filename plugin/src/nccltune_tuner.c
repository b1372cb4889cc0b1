/*
 * nccltune's NCCL tuner plugin: applies the rules `nccltune export --format
 * plugin` writes, read from the file named by $NCCLTUNE_RULES.
 *
 * Each communicator reads the file at init and keeps the rules that match its
 * node and rank counts. For each collective NCCL asks about, the first kept
 * rule that matches the collective and its size steers NCCL's choice by
 * lowering one entry of NCCL's cost table; where no rule matches, NCCL's
 * choice stands. A file the plugin cannot read or parse is reported and
 * ignored: the job runs with NCCL's own tuning rather than failing.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tuner_abi.h"

#define RULES_ENV "NCCLTUNE_RULES"
#define RULES_HEADER "nccltune-rules"
#define RULES_VERSION "1"
#define MAX_FILE_BYTES (1 << 20) /* far above any real rules file */
#define MAX_CHANNELS 64          /* NCCL's MAXCHANNELS */
#define RULE_FIELDS 8 /* collective min_bytes max_bytes nodes ranks algorithm protocol channels */
#define ANY -1 /* algorithm or protocol left to NCCL */
#define TITLE_LEN 96
#define SHOWN_BYTES 40                  /* how much of a token a message quotes */
#define SHOWN_LEN (4 * SHOWN_BYTES + 1) /* each byte at most "\xNN" */

/* Every message starts with "nccltune: "; the formats are literals. Init's
 * lines carry NCCL_INIT too, so that NCCL's default subsystems show them. */
#define LOG(log, level, flags, ...) \
  do { \
    if (log) (log)(level, flags, __FILE__, __LINE__, "nccltune: " __VA_ARGS__); \
  } while (0)
#define INFO(log, ...) LOG(log, NCCL_LOG_INFO, NCCL_INIT | NCCL_TUNING, __VA_ARGS__)
#define TUNING(log, ...) LOG(log, NCCL_LOG_INFO, NCCL_TUNING, __VA_ARGS__)
#define WARN(log, ...) LOG(log, NCCL_LOG_WARN, (unsigned long)NCCL_ALL, __VA_ARGS__)

/* Every communicator reads the file; one it cannot use is a WARN for the
 * process's first and INFO for the others, which say the same. */
static atomic_bool warned;
#define REFUSED(log, ...) \
  do { \
    if (atomic_exchange(&warned, true)) INFO(log, __VA_ARGS__); \
    else WARN(log, __VA_ARGS__); \
  } while (0)

static const char* const collNames[] = {
  [ncclFuncBroadcast] = "broadcast",
  [ncclFuncReduce] = "reduce",
  [ncclFuncAllGather] = "allgather",
  [ncclFuncReduceScatter] = "reducescatter",
  [ncclFuncAllReduce] = "allreduce",
  [ncclFuncSendRecv] = "sendrecv",
  [ncclFuncSend] = "send",
  [ncclFuncRecv] = "recv",
  [ncclFuncAlltoAll] = "alltoall",
};

static const char* const algoNames[NCCL_NUM_ALGORITHMS] = {
  [NCCL_ALGO_TREE] = "tree",
  [NCCL_ALGO_RING] = "ring",
  [NCCL_ALGO_COLLNET_DIRECT] = "collnet_direct",
  [NCCL_ALGO_COLLNET_CHAIN] = "collnet_chain",
  [NCCL_ALGO_NVLS] = "nvls",
  [NCCL_ALGO_NVLS_TREE] = "nvls_tree",
  [NCCL_ALGO_PAT] = "pat",
};

static const char* const protoNames[NCCL_NUM_PROTOCOLS] = {
  [NCCL_PROTO_LL] = "ll",
  [NCCL_PROTO_LL128] = "ll128",
  [NCCL_PROTO_SIMPLE] = "simple",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* What a rule has logged, so that getCollInfo logs each thing once. */
enum { LOGGED_APPLIED = 1, LOGGED_UNAVAILABLE = 2 };

struct rule {
  int coll;
  uint64_t minBytes, maxBytes; /* inclusive; maxBytes UINT64_MAX: no bound */
  uint64_t nodes, ranks;       /* 0: any */
  int algo, proto;             /* ANY: NCCL's choice */
  int channels;                /* 0: NCCL's count */
  int number, line;            /* 1-based place among the file's rules, and its line */
  atomic_uint logged;
};

struct context {
  ncclDebugLogger_t log;
  size_t nNodes;
  size_t nRules;
  struct rule rules[];
};

/* Parsing. */

struct parser {
  const char* path;
  int line;
  char err[400]; /* room for the longest message, a quoted token of SHOWN_LEN included */
};

/* Records why parsing failed; returns false for the caller to return. */
__attribute__((format(printf, 2, 3))) static bool fail(struct parser* p, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err, sizeof(p->err), fmt, ap);
  va_end(ap);
  return false;
}

/* The length of the UTF-8 character s starts with (RFC 3629), or 0. */
static int utf8Len(const unsigned char* s) {
  unsigned char lo = 0x80, hi = 0xBF;
  int n;
  if (s[0] < 0x80) return 1;
  if (s[0] >= 0xC2 && s[0] <= 0xDF) {
    n = 2;
  } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
    n = 3;
    if (s[0] == 0xE0) lo = 0xA0; /* no overlong forms */
    if (s[0] == 0xED) hi = 0x9F; /* no surrogates */
  } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
    n = 4;
    if (s[0] == 0xF0) lo = 0x90;
    if (s[0] == 0xF4) hi = 0x8F; /* nothing past U+10FFFF */
  } else {
    return 0;
  }
  if (s[1] < lo || s[1] > hi) return 0;
  for (int i = 2; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
  }
  return n;
}

/*
 * s as a message quotes it: its first SHOWN_BYTES bytes, cut where a
 * character starts, with a control character (C0, DEL, or C1: U+0080 to
 * U+009F, "\xc2\x9b" is CSI to a terminal) or a byte that is not UTF-8
 * written \xNN, so that NCCL's log stays text a terminal shows as it is.
 */
static const char* shown(const char* s, char buf[SHOWN_LEN]) {
  const unsigned char* u = (const unsigned char*)s;
  size_t in = 0, out = 0;
  while (u[in] && in < SHOWN_BYTES) {
    int n = utf8Len(u + in);
    if (n == 0 || u[in] < 0x20 || u[in] == 0x7F || (u[in] == 0xC2 && u[in + 1] < 0xA0)) {
      out += (size_t)snprintf(buf + out, SHOWN_LEN - out, "\\x%02x", u[in]);
      in++;
      continue;
    }
    if (in + (size_t)n > SHOWN_BYTES) break;
    memcpy(buf + out, u + in, (size_t)n);
    in += (size_t)n;
    out += (size_t)n;
  }
  buf[out] = '\0';
  return buf;
}

/* Parses a field (never empty) as a decimal integer of at most max; no sign. */
static bool parseUint(struct parser* p, const char* field, const char* s, uint64_t max, uint64_t* out) {
  uint64_t v = 0;
  char buf[SHOWN_LEN];
  for (const char* c = s; *c; c++) {
    if (*c < '0' || *c > '9') return fail(p, "%s \"%s\" is not a non-negative decimal integer", field, shown(s, buf));
    unsigned d = (unsigned)(*c - '0');
    if (d > max || v > (max - d) / 10) {
      return fail(p, "%s %s is too large (at most %llu)", field, shown(s, buf), (unsigned long long)max);
    }
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

/* Parses a node or rank count: a positive integer, or "*" (stored as 0). */
static bool parseCount(struct parser* p, const char* field, const char* s, uint64_t* out) {
  if (strcmp(s, "*") == 0) {
    *out = 0;
    return true;
  }
  if (!parseUint(p, field, s, UINT64_MAX, out)) return false;
  if (*out == 0) return fail(p, "%s must be positive or *, got 0", field);
  return true;
}

/* Looks s up in names; with orAny, "*" (stored as ANY) leaves the choice to NCCL. */
static bool lookup(struct parser* p, const char* field, const char* const* names, int n, bool orAny, const char* s,
                   int* out) {
  char known[128] = "", buf[SHOWN_LEN];
  if (orAny && strcmp(s, "*") == 0) {
    *out = ANY;
    return true;
  }
  for (int i = 0; i < n; i++) {
    if (strcmp(names[i], s) == 0) {
      *out = i;
      return true;
    }
  }
  for (int i = 0; i < n; i++) {
    if (strcasecmp(names[i], s) == 0) return fail(p, "%s \"%s\" must be lower case: %s", field, shown(s, buf), names[i]);
    if (*known) strcat(known, " ");
    strcat(known, names[i]);
  }
  return fail(p, "unknown %s \"%s\" (want one of: %s%s)", field, shown(s, buf), known, orAny ? " *" : "");
}

/*
 * Splits a line of len bytes in place into its fields, dropping a comment and
 * the CR of a CRLF. Returns how many, up to RULE_FIELDS + 1 (enough to see a
 * line with too many), or -1 for a line with a NUL byte or another control
 * character but tab, anywhere (a rules file is text, and NCCL's log, where
 * messages quote it, goes to terminals).
 */
static int split(struct parser* p, char* s, size_t len, char** f) {
  int n = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '\0') {
      fail(p, "NUL byte");
      return -1;
    }
    if ((ch < 0x20 && ch != '\t' && !(ch == '\r' && i == len - 1)) || ch == 0x7F) {
      fail(p, "control character 0x%02x", ch);
      return -1;
    }
  }
  s[len] = '\0';
  if (len > 0 && s[len - 1] == '\r') s[len - 1] = '\0';
  s[strcspn(s, "#")] = '\0';
  for (;;) {
    s += strspn(s, " \t");
    if (*s == '\0' || n > RULE_FIELDS) return n;
    f[n++] = s;
    s += strcspn(s, " \t");
    if (*s) *s++ = '\0';
  }
}

static bool parseHeader(struct parser* p, char** f, int n) {
  char buf[SHOWN_LEN];
  if (n != 2 || strcmp(f[0], RULES_HEADER) != 0) {
    return fail(p, "the first line must be \"" RULES_HEADER " " RULES_VERSION "\"");
  }
  if (strcmp(f[1], RULES_VERSION) != 0) {
    return fail(p, "rules version \"%s\" is not supported (this plugin reads version " RULES_VERSION ")",
                shown(f[1], buf));
  }
  return true;
}

static bool parseRule(struct parser* p, char** f, int n, struct rule* r) {
  uint64_t channels;
  if (n != RULE_FIELDS) {
    return fail(p, "%s%d fields, want %d: collective min_bytes max_bytes nodes ranks algorithm protocol channels",
                n > RULE_FIELDS ? "more than " : "", n > RULE_FIELDS ? RULE_FIELDS : n, RULE_FIELDS);
  }
  if (!lookup(p, "collective", collNames, (int)COUNT(collNames), false, f[0], &r->coll)) return false;
  if (!parseUint(p, "min_bytes", f[1], UINT64_MAX, &r->minBytes)) return false;
  if (strcmp(f[2], "-") == 0) {
    r->maxBytes = UINT64_MAX;
  } else if (!parseUint(p, "max_bytes", f[2], UINT64_MAX, &r->maxBytes)) {
    return false;
  }
  if (r->minBytes > r->maxBytes) {
    return fail(p, "min_bytes %llu is above max_bytes %llu", (unsigned long long)r->minBytes,
                (unsigned long long)r->maxBytes);
  }
  if (!parseCount(p, "nodes", f[3], &r->nodes) || !parseCount(p, "ranks", f[4], &r->ranks)) return false;
  if (!lookup(p, "algorithm", algoNames, NCCL_NUM_ALGORITHMS, true, f[5], &r->algo)) return false;
  if (!lookup(p, "protocol", protoNames, NCCL_NUM_PROTOCOLS, true, f[6], &r->proto)) return false;
  if (!parseUint(p, "channels", f[7], MAX_CHANNELS, &channels)) return false;
  r->channels = (int)channels;
  return true;
}

/* Appends r to the context *c, growing it; false when out of memory. */
static bool append(struct context** c, size_t* cap, const struct rule* r) {
  size_t n = *c ? (*c)->nRules : 0;
  if (n == *cap) {
    size_t grown = n ? 2 * n : 8;
    struct context* g = realloc(*c, sizeof(**c) + grown * sizeof(g->rules[0]));
    if (!g) return false;
    g->nRules = n;
    *c = g;
    *cap = grown;
  }
  (*c)->rules[(*c)->nRules++] = *r;
  return true;
}

/*
 * Parses text, len bytes and a NUL, in place. On success *out holds the rules
 * for a communicator of nNodes and nRanks (NULL: none) and *total counts all
 * the file's rules; on failure, p says where and why.
 */
static bool parseRules(struct parser* p, char* text, size_t len, size_t nNodes, size_t nRanks, struct context** out,
                       int* total) {
  struct context* c = NULL;
  size_t cap = 0;
  bool header = false;
  char* end = text + len;
  *total = 0;
  /* A UTF-8 byte order mark, which Windows editors write first and no one sees. */
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) text += 3;
  for (char *s = text, *next; s < end; s = next, p->line++) {
    char* nl = memchr(s, '\n', (size_t)(end - s));
    char* f[RULE_FIELDS + 1];
    next = nl ? nl + 1 : end;
    int n = split(p, s, (size_t)((nl ? nl : end) - s), f);
    if (n < 0) goto fail;
    if (n == 0) continue;
    if (!header) {
      if (!parseHeader(p, f, n)) goto fail;
      header = true;
      continue;
    }
    struct rule r = {.number = ++*total, .line = p->line};
    if (!parseRule(p, f, n, &r)) goto fail;
    if ((r.nodes && r.nodes != nNodes) || (r.ranks && r.ranks != nRanks)) continue;
    if (!append(&c, &cap, &r)) {
      fail(p, "out of memory");
      goto fail;
    }
  }
  if (!header) {
    /* At the file's last line (the first of an empty file), not one past it. */
    if (p->line > 1) p->line--;
    fail(p, "end of file before the \"" RULES_HEADER " " RULES_VERSION "\" line");
    goto fail;
  }
  if (c) c->nNodes = nNodes;
  *out = c;
  return true;
fail:
  free(c);
  return false;
}

/*
 * Reads a file of at most MAX_FILE_BYTES, NUL-terminated. A pipe, socket or
 * terminal is refused where it cannot seek, a directory where it cannot be
 * read; a device is read like a file, its first MAX_FILE_BYTES + 1 bytes at
 * most. Not fstat: built against glibc 2.33 or later the library would need
 * fstat@GLIBC_2.33, and a job on an older glibc could not load it.
 */
static char* readFile(struct parser* p, size_t* len) {
  char* buf = NULL;
  /* O_NONBLOCK: opening a FIFO must not hang the job; it is refused below. */
  int fd = open(p->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) goto fail_errno;
  if (lseek(fd, 0, SEEK_CUR) < 0) {
    if (errno != ESPIPE) goto fail_errno;
    fail(p, "not a regular file");
    goto fail;
  }
  buf = malloc(MAX_FILE_BYTES + 1);
  if (!buf) {
    fail(p, "out of memory");
    goto fail;
  }
  /* Up to one byte more than allowed, to see a file that is too large. */
  for (*len = 0; *len <= MAX_FILE_BYTES;) {
    ssize_t n = read(fd, buf + *len, MAX_FILE_BYTES + 1 - *len);
    if (n == 0) break;
    if (n < 0 && errno != EINTR) goto fail_errno;
    if (n > 0) *len += (size_t)n;
  }
  if (*len > MAX_FILE_BYTES) {
    fail(p, "larger than %d bytes", MAX_FILE_BYTES);
    goto fail;
  }
  buf[*len] = '\0';
  close(fd);
  return buf;
fail_errno:
  if (strerror_r(errno, p->err, sizeof(p->err)) != 0) fail(p, "error %d", errno);
fail:
  free(buf);
  if (fd >= 0) close(fd);
  return NULL;
}

/* Formatting rules for the log. */

static const char* number(uint64_t v, char buf[24]) {
  snprintf(buf, 24, "%llu", (unsigned long long)v);
  return buf;
}

static const char* maxText(uint64_t v, const char* unbounded, char buf[24]) {
  return v == UINT64_MAX ? unbounded : number(v, buf);
}

static const char* countText(uint64_t v, char buf[24]) { return v == 0 ? "*" : number(v, buf); }

static const char* nameOrAny(const char* const* names, int i) { return i == ANY ? "*" : names[i]; }

/* names[i], or "#i" for an index past the n names: NCCL's table may grow
 * within one interface version (2.23 added PAT to v3's). */
static const char* indexName(const char* const* names, int n, int i, char buf[24]) {
  if (i < n) return names[i];
  snprintf(buf, 24, "#%d", i);
  return buf;
}

/* "allreduce 65536-inf", how a rule names itself in getCollInfo's log. */
static void ruleTitle(const struct rule* r, char buf[TITLE_LEN]) {
  char max[24];
  snprintf(buf, TITLE_LEN, "rule %d (%s %llu-%s)", r->number, collNames[r->coll], (unsigned long long)r->minBytes,
           maxText(r->maxBytes, "inf", max));
}

/* Logs the rule as it would be written in a rules file. */
static void logRule(ncclDebugLogger_t log, const struct rule* r) {
  char max[24], nodes[24], ranks[24];
  INFO(log, "rule %d (line %d): %s %llu %s %s %s %s %s %d", r->number, r->line, collNames[r->coll],
       (unsigned long long)r->minBytes, maxText(r->maxBytes, "-", max),
       countText(r->nodes, nodes), countText(r->ranks, ranks), nameOrAny(algoNames, r->algo),
       nameOrAny(protoNames, r->proto), r->channels);
}

/* Loads the rules for a communicator; NULL where there are none to apply. */
static struct context* load(size_t nRanks, size_t nNodes, ncclDebugLogger_t log) {
  struct parser p = {.path = getenv(RULES_ENV), .line = 1};
  struct context* c = NULL;
  size_t len;
  int total;
  if (!p.path || !*p.path) {
    INFO(log, RULES_ENV " is not set: NCCL makes every choice");
    return NULL;
  }
  char* text = readFile(&p, &len);
  if (!text) {
    REFUSED(log, "cannot read rules file %s: %s; NCCL makes every choice", p.path, p.err);
    return NULL;
  }
  bool ok = parseRules(&p, text, len, nNodes, nRanks, &c, &total);
  free(text);
  if (!ok) {
    REFUSED(log, "%s:%d: %s; ignoring the file, NCCL makes every choice", p.path, p.line, p.err);
    return NULL;
  }
  INFO(log, "loaded %s: %d rules, %zu for this communicator (%zu nodes, %zu ranks)", p.path, total,
       c ? c->nRules : 0, nNodes, nRanks);
  if (!c) return NULL;
  c->log = log;
  for (size_t i = 0; i < c->nRules; i++) {
    atomic_init(&c->rules[i].logged, 0);
    logRule(log, &c->rules[i]);
  }
  return c;
}

/* Applying rules. */

static bool firstTime(struct rule* r, unsigned what) {
  return !(atomic_load_explicit(&r->logged, memory_order_relaxed) & what) &&
         !(atomic_fetch_or_explicit(&r->logged, what, memory_order_relaxed) & what);
}

/* The pair NCCL picks from the table (topoGetAlgoInfo): the first of the
 * cheapest available; -1 for none. */
static int picked(const float* table, int n) {
  int best = -1;
  for (int i = 0; i < n; i++) {
    if (table[i] >= 0.0f && (best < 0 || table[i] < table[best])) best = i;
  }
  return best;
}

/*
 * Whether NCCL bounds a plugin's channel count by the channels it set up
 * when it runs algorithm algo. It schedules CollNet, and NVLS across nodes
 * (CollNet+NVLS), on exactly the channels it is given (enqueue.cc,
 * scheduleCollTasksToPlan's isCollnet), beyond those it set up or
 * MAXCHANNELS (32 in 2.24): more than it set up crash the job.
 * An algorithm of a later NCCL may be scheduled so too.
 */
static bool boundsChannels(int algo, size_t nNodes) {
  switch (algo) {
    case NCCL_ALGO_TREE:
    case NCCL_ALGO_RING:
    case NCCL_ALGO_NVLS_TREE:
    case NCCL_ALGO_PAT:
      return true;
    case NCCL_ALGO_NVLS:
      return nNodes == 1;
    default:
      return false;
  }
}

/*
 * Steers NCCL to the rule's algorithm and protocol by setting their cost to
 * 0.0. Where the rule leaves one of the two to NCCL, the pair NCCL rated
 * cheapest among the available ones with the other wins, one of a later
 * NCCL's algorithms or protocols that the plugin cannot name included. Entries NCCL marked
 * unavailable (negative: NCCL_ALGO_PROTO_IGNORE) are never touched: NCCL
 * cannot run them. A rule whose pair is unavailable for this call leaves
 * NCCL's choice alone, its channel count too, since that was tuned for its
 * pair. The channel count applies only where NCCL bounds it (boundsChannels)
 * for the pair it will pick.
 */
static void apply(struct context* c, struct rule* r, float* table, int numAlgo, int numProto, int* nChannels) {
  char title[TITLE_LEN];
  int best = -1, pick;
  if (r->algo != ANY || r->proto != ANY) {
    int a0 = r->algo == ANY ? 0 : r->algo, a1 = r->algo == ANY ? numAlgo : r->algo + 1;
    int p0 = r->proto == ANY ? 0 : r->proto, p1 = r->proto == ANY ? numProto : r->proto + 1;
    for (int a = a0; a < a1 && a < numAlgo; a++) {
      for (int p = p0; p < p1 && p < numProto; p++) {
        int i = a * numProto + p;
        if (table[i] >= 0.0f && (best < 0 || table[i] < table[best])) best = i;
      }
    }
    if (best < 0) {
      if (firstTime(r, LOGGED_UNAVAILABLE)) {
        ruleTitle(r, title);
        TUNING(c->log, "%s: %s/%s is not available, NCCL's choice stands (logged once)", title,
               nameOrAny(algoNames, r->algo), nameOrAny(protoNames, r->proto));
      }
      return;
    }
    table[best] = 0.0f;
  }
  pick = picked(table, numAlgo * numProto);
  bool bounded = pick >= 0 && boundsChannels(pick / numProto, c->nNodes);
  if (r->channels > 0 && bounded) *nChannels = r->channels;
  if (firstTime(r, LOGGED_APPLIED)) {
    char channels[128] = "", algo[24], proto[24];
    if (r->channels > 0 && bounded) {
      snprintf(channels, sizeof(channels), " channels %d", r->channels);
    } else if (r->channels > 0 && pick >= 0) {
      snprintf(channels, sizeof(channels), ", NCCL's channels (it runs %s on exactly the %d given, set up or not)",
               indexName(algoNames, NCCL_NUM_ALGORITHMS, pick / numProto, algo), r->channels);
    }
    ruleTitle(r, title);
    if (best >= 0) {
      TUNING(c->log, "%s -> %s/%s%s", title, indexName(algoNames, NCCL_NUM_ALGORITHMS, best / numProto, algo),
             indexName(protoNames, NCCL_NUM_PROTOCOLS, best % numProto, proto), channels);
    } else {
      TUNING(c->log, "%s -> NCCL's algorithm and protocol%s", title, channels);
    }
  }
}

/* The interface, one implementation for every version. */

static ncclResult_t getCollInfo(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels) {
  struct context* c = context;
  (void)numPipeOps;
  (void)regBuff;
  if (!c) return ncclSuccess;
  for (size_t i = 0; i < c->nRules; i++) {
    struct rule* r = &c->rules[i];
    if (r->coll == (int)collType && nBytes >= r->minBytes && nBytes <= r->maxBytes) {
      /* Not an array of pointers: NCCL's float[numAlgo][numProto], cast. */
      apply(c, r, (float*)collCostTable, numAlgo, numProto, nChannels);
      break;
    }
  }
  return ncclSuccess;
}

static ncclResult_t finalize(void* context) {
  free(context);
  return ncclSuccess;
}

static ncclResult_t initV4(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context) {
  *context = load(nRanks, nNodes, logFunction);
  return ncclSuccess;
}

static ncclResult_t initV5(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                           ncclNvlDomainInfo_v5_t* nvlDomainInfo, ncclTunerConstants_v5_t* constants) {
  (void)commId;
  (void)nvlDomainInfo;
  (void)constants;
  return initV4(nRanks, nNodes, logFunction, context);
}

#define EXPORT __attribute__((visibility("default")))

/* NCCL 2.30 and later. */
EXPORT const ncclTuner_v6_t ncclTunerPlugin_v6 = {
  .name = "nccltune",
  .init = initV5,
  .getCollInfo = getCollInfo,
  .finalize = finalize,
  .getChunkSize = NULL,
};

/* NCCL 2.28 and 2.29. */
EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {
  .name = "nccltune",
  .init = initV5,
  .getCollInfo = getCollInfo,
  .finalize = finalize,
};

/* NCCL 2.24 to 2.27. */
EXPORT const ncclTuner_v4_t ncclTunerPlugin_v4 = {
  .name = "nccltune",
  .init = initV4,
  .getCollInfo = getCollInfo,
  .destroy = finalize,
};
