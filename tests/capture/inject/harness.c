/* Test harness for cuzk_sim/capture/inject/cuzk_capture.c: the library's own record
 * writer fed CUPTI activity structs built by hand (the partition of cupti_canned.py's
 * one_partition, enum fields as CUPTI's C numbers), and two cuMemGetInfo samples, then
 * the trace file closed as at the program's exit. No driver or GPU is touched.
 * Usage: harness FOLDER  (writes FOLDER/trace-<pid>.json) */
#include "cuzk_capture.c"

#include <sys/wait.h>

#define MiB (1ull << 20)

static void api(uint32_t corr, uint64_t t, CUpti_CallbackId cbid, int runtime) {
  CUpti_ActivityAPI r;
  memset(&r, 0, sizeof r);
  r.kind = runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
  r.cbid = cbid;
  r.start = t;
  r.end = t + 5;
  r.correlationId = corr;
  write_record((CUpti_Activity *)&r);
}

static void memory(uint64_t t, int op, int kind, uint64_t addr, uint64_t bytes, uint32_t corr,
                   int is_async, uint32_t stream) {
  CUpti_ActivityMemory4 r;
  memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  r.timestamp = t;
  r.memoryOperationType = (CUpti_ActivityMemoryOperationType)op;
  r.memoryKind = (CUpti_ActivityMemoryKind)kind;
  r.address = addr;
  r.bytes = bytes;
  r.correlationId = corr;
  r.contextId = 1;
  r.isAsync = (uint32_t)is_async;
  r.streamId = stream;
  write_record((CUpti_Activity *)&r);
}

static void copy(int kind, int src, int dst, uint64_t start, uint64_t end, uint64_t bytes,
                 uint32_t corr) {
  CUpti_ActivityMemcpy6 r;
  memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  r.copyKind = (uint8_t)kind;
  r.srcKind = (uint8_t)src;
  r.dstKind = (uint8_t)dst;
  r.start = start;
  r.end = end;
  r.bytes = bytes;
  r.streamId = 7;
  r.correlationId = corr;
  r.contextId = 1;
  write_record((CUpti_Activity *)&r);
}

static void marker(uint64_t t, int flags, uint32_t id, const char *name) {
  CUpti_ActivityMarker2 r;
  memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_MARKER;
  r.flags = (CUpti_ActivityFlag)flags;
  r.timestamp = t;
  r.id = id;
  r.name = name;
  write_record((CUpti_Activity *)&r);
}

int main(int argc, char **argv) {
  if (argc < 2 || !open_trace(argv[1])) return 2;
  CUpti_ActivityContext3 c;
  memset(&c, 0, sizeof c);
  c.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  c.contextId = 1;
  c.nullStreamId = 7;
  write_record((CUpti_Activity *)&c);
  api(1, 100, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 1);
  api(2, 150, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, 1);
  api(3, 200, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 1);
  api(4, 300, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, 0);
  api(5, 400, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1);
  api(6, 2600, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 1);
  api(7, 2800, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 1);
  api(8, 4000, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, 1);
  api(9, 4100, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, 1);
  api(10, 4200, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, 1);
  memory(100, 1, 3, 0x1000, 64 * MiB, 1, 0, 0);                                   /* device */
  memory(150, 1, 2, 0x9000, 4 * MiB, 2, 0, 0);                                    /* pinned */
  copy(1, 2, 3, 210, 1210, 4 * MiB, 3);                                           /* HtoD */
  memory(300, 1, 3, 0x2000, 32 * MiB, 4, 1, 7);                                   /* async */
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = "ntt_kernel";
  k.start = 500;
  k.end = 2500;
  k.contextId = 1;
  k.streamId = 13;
  k.correlationId = 5;
  write_record((CUpti_Activity *)&k);
  CUpti_ActivitySynchronization2 y;
  memset(&y, 0, sizeof y);
  y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  y.start = 2600;
  y.end = 2700;
  y.contextId = 1;
  y.streamId = 13;
  y.correlationId = 6;
  write_record((CUpti_Activity *)&y);
  if (argc == 3 && !strcmp(argv[2], "killed")) {
    /* a daemon stopped by a signal: what was flushed stays, a record half written */
    fflush(out);
    fputs(",\n{\"kind\": \"MEMC", out);
    fflush(out);
    _exit(0);
  }
  /* a fork whose child exits through exit(): it must not write the parent's buffered
   * records into the file a second time */
  pid_t child = fork();
  if (child == 0) exit(0);
  waitpid(child, NULL, 0);
  copy(2, 3, 1, 2900, 3900, 1 * MiB, 7);                                          /* DtoH */
  memory(4000, 2, 3, 0x2000, 32 * MiB, 8, 1, 7);
  memory(4100, 2, 3, 0x1000, 64 * MiB, 9, 0, 0);
  CUpti_ActivityMemset4 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.start = 4300;
  m.end = 4400;
  m.bytes = 1024;
  m.streamId = 7;
  m.correlationId = 10;
  write_record((CUpti_Activity *)&m);
  marker(50, CUPTI_ACTIVITY_FLAG_MARKER_START, 5, "partition");
  marker(60, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 6, "tick \"quoted\"");
  marker(5000, CUPTI_ACTIVITY_FLAG_MARKER_END, 5, NULL);
  /* after cudaMalloc: 500 MiB context + 64 MiB live of a 1000 MiB card; after the async
   * free (not used: the pool's idle bytes); the context is 500 MiB */
  meminfo_record(110, 0, 1000 * MiB - 564 * MiB, 1000 * MiB, "cudaMalloc_v3020");
  meminfo_record(4010, 0, 100 * MiB, 1000 * MiB, "cudaFreeAsync_v11020");
  note("harness: no driver");
  close_trace();
  return 0;
}
