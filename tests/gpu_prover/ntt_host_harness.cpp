// The host harness of test_ntt_host_emulation.py: kernels/ntt.cu (shared memory made
// static) and field_ops.cu compiled for the host, each block's lanes run as threads that
// take turns; __syncwarp / __syncthreads are barriers.
#define FIELD_HOST_EMULATION 1
#include <barrier>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
typedef unsigned int u32_;
struct Dim { unsigned x, y, z; };
thread_local Dim threadIdx, blockIdx;
Dim blockDim, gridDim;
struct uint4 { u32_ x, y, z, w; };
inline uint4 make_uint4(u32_ x, u32_ y, u32_ z, u32_ w) { return {x, y, z, w}; }
inline u32_ __brev(u32_ x) { u32_ r = 0; for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i); return r; }
inline unsigned long long __brevll(unsigned long long x) {
    unsigned long long r = 0; for (int i = 0; i < 64; i++) r |= ((x >> i) & 1ull) << (63 - i); return r; }
using std::min;
static std::mutex baton;  // one lane runs at a time (the emulated carry flag is global)
static std::barrier<>* block_barrier;
inline void __syncwarp() { baton.unlock(); block_barrier->arrive_and_wait(); baton.lock(); }
inline void __syncthreads() { __syncwarp(); }
#define __launch_bounds__(x)
#include "ntt_host.cu"
#include "field_ops.cu"
Fr dyn[1 << 12];  // fr_ntt_group_tw's dynamic shared memory
uint4 dyn_pass[3 << 10];  // fr_ntt_pass's (48 KiB: elements and twiddles, 2 uint4 each)

// one thread per lane of a block, each running the grid's blocks in turn; a barrier between
// blocks (a block's shared memory is the next one's)
static void run_grid(unsigned grid, unsigned block, const std::function<void()>& f) {
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    std::barrier<> bar(block);
    block_barrier = &bar;
    std::vector<std::thread> lanes;
    for (unsigned t = 0; t < block; t++)
        lanes.emplace_back([&, t] {
            threadIdx = {t, 0, 0};
            for (unsigned b = 0; b < grid; b++) {
                blockIdx = {b, 0, 0};
                baton.lock();
                f();
                baton.unlock();
                bar.arrive_and_wait();
            }
        });
    for (auto& l : lanes) l.join();
}

// stdin: n_a n_t, a's words, the tables' words (hex), then launches:
//   name grid block nargs arg... (arg: pB:OFF pointer into buffer B (0 a, 1 tables) at
//   word OFF, or iV an integer); stdout: a's words after the launches
int main() {
    size_t na, nt;
    if (scanf("%zu %zu", &na, &nt) != 2) return 1;
    std::vector<u32> buf[2] = {std::vector<u32>(na), std::vector<u32>(nt)};
    for (int b = 0; b < 2; b++)
        for (auto& w : buf[b]) if (scanf("%x", &w) != 1) return 1;
    char name[64];
    unsigned grid, block;
    int nargs;
    while (scanf("%63s %u %u %d", name, &grid, &block, &nargs) == 4) {
        std::vector<u32*> p;
        std::vector<long long> v;
        for (int i = 0; i < nargs; i++) {
            char s[64];
            if (scanf("%63s", s) != 1) return 1;
            if (s[0] == 'p') { int b; long long off; sscanf(s + 1, "%d:%lld", &b, &off); p.push_back(buf[b].data() + off); v.push_back(0); }
            else { p.push_back(nullptr); v.push_back(atoll(s + 1)); }
        }
        std::string k = name;
        std::function<void()> f;
        if (k == "fr_bitrev") f = [&] { fr_bitrev(p[0], v[1], (int)v[2]); };
        else if (k == "fr_bitrev_tiled") f = [&] { fr_bitrev_tiled(p[0], (int)v[1], p[2], p[3], (int)v[4], p[5], (int)v[6]); };
        else if (k == "fr_ntt_group_tw") f = [&] { fr_ntt_group_tw(p[0], p[1], p[2], (int)v[3], (int)v[4], (int)v[5], (int)v[6]); };
        else if (k == "fr_ntt_pass") f = [&] { fr_ntt_pass(p[0], p[1], p[2], (int)v[3], (int)v[4], (int)v[5], (int)v[6], p[7], (int)v[8], (int)v[9]); };
        else if (k == "fr_scale") f = [&] { fr_scale(p[0], p[1], v[2]); };
        else if (k == "fr_coset_scale") f = [&] { fr_coset_scale(p[0], p[1], p[2], (int)v[3], p[4], v[5]); };
        else { fprintf(stderr, "unknown kernel %s\n", name); return 2; }
        run_grid(grid, block, f);
    }
    for (auto w : buf[0]) printf("%x\n", w);
}
