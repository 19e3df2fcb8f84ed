// A sampling profiler to preload into a benchmark on a machine without `perf`: every 500 us of
// process CPU time (SIGPROF) it records the interrupted instruction address, and at exit writes
// the addresses and the process's memory map. `report.py` turns them into a flat profile.
//
//   TANDEM_SAMPLE_OUT=out LD_PRELOAD=libtandem_sampler.so tandem_cuda_bench --benchmark_filter=...
//   tools/bench/sampler/report.py out
//
// Only the leaf address is kept (no call stacks): enough to see which functions, and which
// libraries (the driver, libc's locks and allocator), the time goes to. Does nothing unless
// TANDEM_SAMPLE_OUT names a folder.

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/time.h>
#include <ucontext.h>

namespace {

constexpr long max_samples = 1L << 22;
unsigned long samples[max_samples];
volatile long sample_count = 0;
constexpr long interval_us = 500;

void record(int /*signal*/, siginfo_t* /*info*/, void* context) {
    const auto* interrupted = static_cast<const ucontext_t*>(context);
    const long index = __atomic_fetch_add(&sample_count, 1, __ATOMIC_RELAXED);
    if (index < max_samples) {
        samples[index] = static_cast<unsigned long>(interrupted->uc_mcontext.gregs[REG_RIP]);
    }
}

void set_timer(long microseconds) {
    itimerval timer{};
    timer.it_interval.tv_usec = microseconds;
    timer.it_value.tv_usec = microseconds;
    setitimer(ITIMER_PROF, &timer, nullptr);
}

void copy_file(const char* from, const std::string& to) {
    FILE* in = std::fopen(from, "r");
    FILE* out = std::fopen(to.c_str(), "w");
    if (in != nullptr && out != nullptr) {
        char buffer[4096];
        std::size_t read = 0;
        while ((read = std::fread(buffer, 1, sizeof buffer, in)) > 0) {
            std::fwrite(buffer, 1, read, out);
        }
    }
    if (in != nullptr) {
        std::fclose(in);
    }
    if (out != nullptr) {
        std::fclose(out);
    }
}

__attribute__((constructor)) void start() {
    if (std::getenv("TANDEM_SAMPLE_OUT") == nullptr) {
        return;
    }
    struct sigaction action{};
    action.sa_sigaction = record;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &action, nullptr);
    set_timer(interval_us);
}

__attribute__((destructor)) void stop() {
    const char* folder = std::getenv("TANDEM_SAMPLE_OUT");
    if (folder == nullptr) {
        return;
    }
    set_timer(0);
    const std::string samples_path = std::string(folder) + "/samples.txt";
    if (FILE* out = std::fopen(samples_path.c_str(), "w")) {
        const long count = sample_count < max_samples ? sample_count : max_samples;
        for (long index = 0; index < count; ++index) {
            std::fprintf(out, "%lx\n", samples[index]);
        }
        std::fclose(out);
    } else {
        std::fprintf(stderr, "tandem sampler: cannot write %s\n", samples_path.c_str());
    }
    copy_file("/proc/self/maps", std::string(folder) + "/maps.txt");
}

}  // namespace
