// tandem_job_notice: how long a rank takes to notice that a peer was SIGKILLed, over 20 kills
// (or --kills N). Each kill is a fresh job of two ranks: this process is rank 0, and a copy of it
// is rank 1, which joins, touches --touch-mib MiB of memory (a process's teardown frees its
// memory before it closes its sockets, so a large rank is noticed later), says so on a pipe and
// waits. Rank 0 then takes the time, kills rank 1 and waits for the notice; the figure is from
// just before kill() to the moment rank 0's watcher read the end of the connection. Rank 1 is
// reaped only after that, so the notice also says how it ended.
//
// With --all-reduce, both ranks open a simulator runtime, rank 0 starts a `Job::all_reduce` of
// 64 KiB that rank 1 never joins (rank 0 waits in its first step), and the figure is from just
// before kill() to the moment rank 0's call returned `DeviceLost` naming rank 1: a rank lost in
// the middle of a collective, as every survivor meets it.
//
// With --backend cuda, both ranks run on CUDA, on the GPUs TANDEM_GPUS names (TANDEM_GPUS=0 puts
// both on GPU 0), and rank 1 opens its runtime even without --all-reduce, so that its death is a
// GPU process's; the all-reduce's buffer is then GPU memory.
//
//   tandem_job_notice [--kills N] [--touch-mib M] [--all-reduce] [--backend sim|cuda]

#include "rank_one.hpp"

#include "tandem/job.hpp"
#include "tandem/job_folder.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>


namespace {

using Clock = std::chrono::steady_clock;

/// Rank 1: joins (with a runtime of `backend`, or none when it is empty), touches `touch_mib`
/// MiB, writes one byte on stdout, waits to be killed.
int be_rank_one(std::size_t touch_mib, const std::string& backend) {
    tandem::JoinOptions options;
    options.open_runtime = !backend.empty();
    options.runtime.backend = backend;
    tandem::Result<tandem::Job> job = tandem::Job::join(options);
    if (!job) {
        std::fprintf(stderr, "%s", job.error().report().c_str());
        return 2;
    }
    std::vector<char> memory(touch_mib << 20);
    for (std::size_t at = 0; at < memory.size(); at += 4096) {
        memory[at] = 1;
    }
    (void)!::write(STDOUT_FILENO, "j", 1);
    ::pause();
    return 0;
}

/// Rank 0's all-reduce that rank 1 never joins, started, then rank 1 killed: the microseconds
/// from kill() to the call's return, and its error's message.
std::pair<double, std::string> kill_in_all_reduce(tandem::Job& job, pid_t pid) {
    tandem::Client device = job.runtime()->client(0);
    tandem::Result<tandem::Handle> buffer = device.allocate(64 << 10);
    if (!buffer) {
        std::fprintf(stderr, "%s", buffer.error().report().c_str());
        std::exit(2);
    }
    Clock::time_point returned_at;
    std::thread caller([&] {
        const tandem::Status reduced =
            job.all_reduce(*buffer, tandem::ElementType::f32, tandem::ReduceOp::sum);
        returned_at = Clock::now();
        if (reduced || reduced.error().kind() != tandem::ErrorKind::DeviceLost) {
            std::fprintf(stderr, "the all-reduce did not fail with DeviceLost: %s\n",
                         reduced ? "it succeeded" : reduced.error().message().c_str());
            std::exit(1);
        }
    });
    const Clock::time_point killed_at = Clock::now();
    ::kill(pid, SIGKILL);
    caller.join();
    return {std::chrono::duration<double, std::micro>(returned_at - killed_at).count(),
            "the all-reduce failed with DeviceLost"};
}

/// One kill: the microseconds from kill() to the notice (or to the all-reduce's failure), and
/// how the notice says it ended. Rank 1 opens a runtime of `backend` for an all-reduce, and on
/// any backend but the simulator.
std::pair<double, std::string> one_kill(std::size_t touch_mib, bool all_reduce,
                                        const std::string& backend) {
    const std::string id = tandem::new_job_id();
    const bool runtime_of_one = all_reduce || backend != "sim";
    const auto [pid, gate] = tandem::bench::start_rank_one(
        id, {"--as-rank-one", std::to_string(touch_mib), runtime_of_one ? backend : ""});
    tandem::JoinOptions options;
    options.open_runtime = all_reduce;
    options.runtime.backend = backend;
    options.environment = tandem::JobEnvironment{0, 2, 0, id, tandem::job_folder_path(id)};
    tandem::Result<tandem::Job> job = tandem::Job::join(options);
    char byte = 0;
    if (!job || ::read(gate, &byte, 1) != 1) {
        std::fprintf(stderr, "rank 1 did not join: %s\n",
                     job ? "its gate closed" : job.error().report().c_str());
        std::exit(2);
    }
    if (all_reduce) {
        const auto figure = kill_in_all_reduce(*job, pid);
        ::waitpid(pid, nullptr, 0);
        ::close(gate);
        return figure;
    }
    const Clock::time_point killed_at = Clock::now();
    ::kill(pid, SIGKILL);
    const std::optional<tandem::RankLoss> loss = job->wait_for_loss_of(1, std::chrono::seconds(60));
    if (!loss) {
        std::fprintf(stderr, "rank 1's death was not noticed within 60 s\n");
        std::exit(1);
    }
    ::waitpid(pid, nullptr, 0);
    ::close(gate);
    const double micros =
        std::chrono::duration<double, std::micro>(loss->noticed_at - killed_at).count();
    return {micros, loss->describe()};
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 4 && std::strcmp(argv[1], "--as-rank-one") == 0) {
        return be_rank_one(std::strtoull(argv[2], nullptr, 10), argv[3]);
    }
    int kills = 20;
    std::size_t touch_mib = 0;
    bool all_reduce = false;
    std::string backend = "sim";
    for (int index = 1; index < argc; ++index) {
        if (std::strcmp(argv[index], "--all-reduce") == 0) {
            all_reduce = true;
            continue;
        }
        if (index + 1 >= argc) {
            break;
        }
        if (std::strcmp(argv[index], "--kills") == 0) {
            kills = std::max(1, std::atoi(argv[index + 1]));
        } else if (std::strcmp(argv[index], "--touch-mib") == 0) {
            touch_mib = std::strtoull(argv[index + 1], nullptr, 10);
        } else if (std::strcmp(argv[index], "--backend") == 0) {
            backend = argv[index + 1];
        }
        ++index;
    }
    std::vector<double> micros;
    for (int kill = 0; kill < kills; ++kill) {
        const auto [figure, how] = one_kill(touch_mib, all_reduce, backend);
        std::printf("kill %2d: noticed after %9.1f us: %s\n", kill + 1, figure, how.c_str());
        micros.push_back(figure);
    }
    std::printf("%d kills%s on %s, rank 1 touching %zu MiB: median %.1f us, worst %.1f us\n",
                kills, all_reduce ? " in an all-reduce" : "", backend.c_str(), touch_mib,
                tandem::bench::median(micros),
                *std::max_element(micros.begin(), micros.end()));
    return 0;
}
