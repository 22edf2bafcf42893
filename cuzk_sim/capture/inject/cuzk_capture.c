/* cuzk-sim's CUPTI injection library: the recorder for programs that are not Python.
 *
 * The CUDA driver loads it into a process whose environment names it in
 * CUDA_INJECTION64_PATH and calls InitializeInjection() from cuInit. It enables CUPTI's
 * activity records (allocations and frees of every allocator, copies, memsets, kernels,
 * host waits, NVTX markers, the API calls behind them, each context's NULL stream) and,
 * when CUZK_SIM_CAPTURE_MEMINFO is not "0", samples cuMemGetInfo after the runtime's
 * allocation, free and first kernel-launch calls (the context's size is worked out from
 * those samples in Python). At exit it flushes CUPTI and writes
 * $CUZK_SIM_CAPTURE_DIR/trace-<pid>.json in the format cuzk_sim/capture/cupti_records.py
 * reads (until then trace-<pid>.json.tmp, one record a line, flushed as CUPTI delivers
 * its buffers: every CUZK_SIM_CAPTURE_FLUSH_MS, default 1000, so a daemon stopped by a
 * signal leaves what it did up to then): {"pid": P, "records": [{"kind": "MEMORY2", ...}, ...], "enabled": [...],
 * "notes": [...]}, enum fields as CUPTI's C numbers, field names as cupti-python's.
 *
 * Built by cuzk_sim/capture/inject_build.py with the system's C compiler against the
 * CUPTI headers it finds. Written for cuzk-sim from CUPTI's documented C API.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUFFER_BYTES (8u << 20)
#define MAX_MEMINFO 20000
#define MAX_LAUNCH_SAMPLES 256

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static pid_t owner;
static char path[4096];
static int records_written;
static uint64_t dropped;
static char enabled[1024];
static char notes[4096];
static int meminfo_samples;
static int launch_samples;
/* the driver's calls, looked up in the libcuda the process already loaded */
typedef CUresult (*mem_get_info_t)(size_t *, size_t *);
typedef CUresult (*ctx_get_device_t)(CUdevice *);
static mem_get_info_t mem_get_info;
static ctx_get_device_t ctx_get_device;

static void note(const char *what) {
  size_t n = strlen(notes);
  if (n + strlen(what) + 8 >= sizeof(notes)) return;
  if (n) strcat(notes, ", ");
  strcat(notes, "\"");
  strcat(notes, what);
  strcat(notes, "\"");
}

static void put_string(const char *s) {
  fputc('"', out);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      fputc('\\', out);
      fputc(c, out);
    } else if (c < 0x20 || c >= 0x7f) {
      fprintf(out, "\\u%04x", c);
    } else {
      fputc(c, out);
    }
  }
  fputc('"', out);
}

/* the start of one record: the separator and its kind */
static void begin(const char *kind) {
  fputs(records_written++ ? ",\n{" : "\n{", out);
  fputs("\"kind\": ", out);
  put_string(kind);
}

static void u64(const char *name, uint64_t v) { fprintf(out, ", \"%s\": %" PRIu64, name, v); }

static void api_record(const CUpti_ActivityAPI *r, int runtime) {
  const char *name = NULL;
  CUpti_CallbackDomain domain = runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  if (cuptiGetCallbackName(domain, r->cbid, &name) != CUPTI_SUCCESS) name = "";
  begin(runtime ? "RUNTIME" : "DRIVER");
  u64("cbid", r->cbid);
  u64("start", r->start);
  u64("end", r->end);
  u64("correlation_id", r->correlationId);
  u64("thread_id", r->threadId);
  fputs(", \"api_name\": ", out);
  put_string(name);
  fputc('}', out);
}

static void memory_record(const CUpti_ActivityMemory4 *r) {
  begin("MEMORY2");
  u64("memory_operation_type", r->memoryOperationType);
  u64("memory_kind", r->memoryKind);
  u64("correlation_id", r->correlationId);
  u64("address", r->address);
  u64("bytes", r->bytes);
  u64("timestamp", r->timestamp);
  u64("device_id", r->deviceId);
  u64("context_id", r->contextId);
  u64("stream_id", r->streamId);
  fprintf(out, ", \"is_async\": %s}", r->isAsync ? "true" : "false");
}

static void copy_record(const CUpti_ActivityMemcpy6 *r) {
  begin("MEMCPY");
  u64("copy_kind", r->copyKind);
  u64("src_kind", r->srcKind);
  u64("dst_kind", r->dstKind);
  u64("bytes", r->bytes);
  u64("start", r->start);
  u64("end", r->end);
  u64("device_id", r->deviceId);
  u64("context_id", r->contextId);
  u64("stream_id", r->streamId);
  u64("correlation_id", r->correlationId);
  fputc('}', out);
}

static void memset_record(const CUpti_ActivityMemset4 *r) {
  begin("MEMSET");
  u64("bytes", r->bytes);
  u64("start", r->start);
  u64("end", r->end);
  u64("device_id", r->deviceId);
  u64("context_id", r->contextId);
  u64("stream_id", r->streamId);
  u64("correlation_id", r->correlationId);
  fputc('}', out);
}

static void kernel_record(const CUpti_ActivityKernel10 *r, const char *kind) {
  begin(kind);
  fputs(", \"name\": ", out);
  put_string(r->name ? r->name : "kernel");
  u64("start", r->start);
  u64("end", r->end);
  u64("device_id", r->deviceId);
  u64("context_id", r->contextId);
  u64("stream_id", r->streamId);
  u64("correlation_id", r->correlationId);
  fputc('}', out);
}

static void context_record(const CUpti_ActivityContext3 *r) {
  begin("CONTEXT");
  u64("context_id", r->contextId);
  u64("device_id", r->deviceId);
  u64("null_stream_id", r->nullStreamId);
  fputc('}', out);
}

static void sync_record(const CUpti_ActivitySynchronization2 *r) {
  begin("SYNCHRONIZATION");
  u64("type", r->type);
  u64("start", r->start);
  u64("end", r->end);
  u64("correlation_id", r->correlationId);
  u64("context_id", r->contextId);
  u64("stream_id", r->streamId);
  u64("cuda_event_id", r->cudaEventId);
  fputc('}', out);
}

static void marker_record(const CUpti_ActivityMarker2 *r) {
  begin("MARKER");
  u64("flags", r->flags);
  u64("timestamp", r->timestamp);
  u64("id", r->id);
  fputs(", \"name\": ", out);
  put_string(r->name ? r->name : "");
  fputc('}', out);
}

static void pool_record(const CUpti_ActivityMemoryPool3 *r) {
  begin("MEMORY_POOL");
  u64("memory_pool_operation_type", r->memoryPoolOperationType);
  u64("timestamp", r->timestamp);
  u64("device_id", r->deviceId);
  u64("address", r->address);
  u64("size", r->size);
  u64("release_threshold", r->releaseThreshold);
  fputc('}', out);
}

/* one activity record, by its kind; kinds not enabled here are skipped */
static void write_record(const CUpti_Activity *rec) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      memory_record((const CUpti_ActivityMemory4 *)rec);
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      copy_record((const CUpti_ActivityMemcpy6 *)rec);
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      memset_record((const CUpti_ActivityMemset4 *)rec);
      break;
    case CUPTI_ACTIVITY_KIND_KERNEL:
      kernel_record((const CUpti_ActivityKernel10 *)rec, "KERNEL");
      break;
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      kernel_record((const CUpti_ActivityKernel10 *)rec, "CONCURRENT_KERNEL");
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      api_record((const CUpti_ActivityAPI *)rec, 1);
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      api_record((const CUpti_ActivityAPI *)rec, 0);
      break;
    case CUPTI_ACTIVITY_KIND_CONTEXT:
      context_record((const CUpti_ActivityContext3 *)rec);
      break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      sync_record((const CUpti_ActivitySynchronization2 *)rec);
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      marker_record((const CUpti_ActivityMarker2 *)rec);
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
      pool_record((const CUpti_ActivityMemoryPool3 *)rec);
      break;
    default:
      break;
  }
}

/* one cuMemGetInfo sample: after which call, the device, its free and total bytes */
static void meminfo_record(uint64_t t, int device, size_t free_b, size_t total_b,
                           const char *after) {
  begin("MEMINFO");
  u64("timestamp", t);
  u64("device_id", (uint64_t)device);
  u64("free", free_b);
  u64("total", total_b);
  fputs(", \"after\": ", out);
  put_string(after);
  fputc('}', out);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = (uint8_t *)aligned_alloc(8, BUFFER_BYTES);
  *size = *buffer ? BUFFER_BYTES : 0;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
  (void)size;
  CUpti_Activity *rec = NULL;
  pthread_mutex_lock(&lock);
  if (out && getpid() == owner) {
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) write_record(rec);
    size_t lost = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &lost) == CUPTI_SUCCESS) dropped += lost;
    fflush(out); /* a process stopped by a signal keeps what was delivered (its .tmp file) */
  }
  pthread_mutex_unlock(&lock);
  free(buffer);
}

/* after the runtime's allocation, free and (first few) kernel-launch calls: the device's
 * free and total bytes, for the context's size */
static void CUPTIAPI on_api(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void *data) {
  (void)user;
  (void)cbid;
  const CUpti_CallbackData *cb = (const CUpti_CallbackData *)data;
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || cb->callbackSite != CUPTI_API_EXIT) return;
  const char *f = cb->functionName ? cb->functionName : "";
  int launch = strncmp(f, "cudaLaunch", 10) == 0;
  if (!launch && strncmp(f, "cudaMalloc", 10) && strncmp(f, "cudaFree", 8) &&
      strncmp(f, "cudaHostAlloc", 13))
    return;
  size_t free_b = 0, total_b = 0;
  uint64_t t = 0;
  pthread_mutex_lock(&lock);
  int take = out && meminfo_samples < MAX_MEMINFO && (!launch || launch_samples < MAX_LAUNCH_SAMPLES);
  if (take) {
    meminfo_samples++;
    launch_samples += launch;
  }
  pthread_mutex_unlock(&lock);
  if (!take || mem_get_info(&free_b, &total_b) != CUDA_SUCCESS ||
      cuptiGetTimestamp(&t) != CUPTI_SUCCESS)
    return;
  int device = 0;
  CUdevice dev;
  if (ctx_get_device(&dev) == CUDA_SUCCESS) device = (int)dev;
  pthread_mutex_lock(&lock);
  if (out && getpid() == owner) meminfo_record(t, device, free_b, total_b, f);
  pthread_mutex_unlock(&lock);
}

/* the trace file's end: the records closed, what was enabled and noted; the file renamed
 * from trace-<pid>.json.tmp to trace-<pid>.json (a reader never sees half a file) */
static void close_trace(void) {
  if (dropped) {
    char line[96];
    snprintf(line, sizeof line, "CUPTI dropped %" PRIu64 " records", dropped);
    note(line);
  }
  fprintf(out, "\n], \"enabled\": [%s], \"notes\": [%s]}\n", enabled, notes);
  fclose(out);
  out = NULL;
  char done[4096];
  snprintf(done, sizeof done, "%.*s", (int)(strlen(path) - 4), path); /* drop ".tmp" */
  rename(path, done);
}

static void finish(void) {
  if (!out || getpid() != owner) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&lock);
  close_trace();
  pthread_mutex_unlock(&lock);
}

/* a fork: nothing of the parent's file left in a buffer the child would flush at its
 * exit; the child records nothing (it is no CUDA process until it execs) */
static void fork_prepare(void) {
  pthread_mutex_lock(&lock);
  if (out) fflush(out);
}
static void fork_parent(void) { pthread_mutex_unlock(&lock); }
static void fork_child(void) {
  out = NULL;
  pthread_mutex_unlock(&lock);
}

/* trace-<pid>.json.tmp in `dir`, its header written; 0 when it cannot be written */
static int open_trace(const char *dir) {
  owner = getpid();
  snprintf(path, sizeof path, "%s/trace-%d.json.tmp", dir, (int)owner);
  out = fopen(path, "w");
  if (!out) {
    fprintf(stderr, "cuzk-sim capture: cannot write %s\n", path);
    return 0;
  }
  fprintf(out, "{\"pid\": %d, \"recorder\": \"cuzk-sim injection\", \"records\": [", (int)owner);
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  return 1;
}

static void enable(CUpti_ActivityKind kind, const char *name) {
  CUptiResult r = cuptiActivityEnable(kind);
  if (r == CUPTI_SUCCESS) {
    if (strlen(enabled) + strlen(name) + 8 < sizeof(enabled)) {
      if (*enabled) strcat(enabled, ", ");
      strcat(enabled, "\"");
      strcat(enabled, name);
      strcat(enabled, "\"");
    }
  } else {
    const char *why = "";
    cuptiGetResultString(r, &why);
    char line[256];
    snprintf(line, sizeof line, "activity kind %s not enabled: %s", name, why);
    note(line);
  }
}

int InitializeInjection(void) {
  const char *dir = getenv("CUZK_SIM_CAPTURE_DIR");
  if (!dir || !*dir || out || !open_trace(dir)) return 1;
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
    fprintf(stderr, "cuzk-sim capture: CUPTI refused the activity callbacks\n");
    note("CUPTI refused the activity callbacks: nothing recorded");
  }
  const char *period = getenv("CUZK_SIM_CAPTURE_FLUSH_MS");
  uint32_t ms = period ? (uint32_t)strtoul(period, NULL, 10) : 1000;
  if (ms && cuptiActivityFlushPeriod(ms) != CUPTI_SUCCESS) note("no periodic flush");
  enable(CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME");
  enable(CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER");
  enable(CUPTI_ACTIVITY_KIND_CONTEXT, "CONTEXT");
  enable(CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2");
  enable(CUPTI_ACTIVITY_KIND_MEMORY_POOL, "MEMORY_POOL");
  enable(CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY");
  enable(CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET");
  enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL");
  enable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION");
  enable(CUPTI_ACTIVITY_KIND_MARKER, "MARKER");
  const char *meminfo = getenv("CUZK_SIM_CAPTURE_MEMINFO");
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda) {
    mem_get_info = (mem_get_info_t)dlsym(cuda, "cuMemGetInfo_v2");
    ctx_get_device = (ctx_get_device_t)dlsym(cuda, "cuCtxGetDevice");
  }
  if (!mem_get_info || !ctx_get_device) {
    note("no cuMemGetInfo samples: libcuda.so.1's cuMemGetInfo_v2 not found");
  } else if (!meminfo || strcmp(meminfo, "0") != 0) {
    CUpti_SubscriberHandle sub;
    if (cuptiSubscribe(&sub, (CUpti_CallbackFunc)on_api, NULL) == CUPTI_SUCCESS)
      cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
    else
      note("no cuMemGetInfo samples: another CUPTI subscriber is active");
  } else {
    note("no cuMemGetInfo samples (CUZK_SIM_CAPTURE_MEMINFO=0)");
  }
  atexit(finish);
  return 1;
}
